# frozen_string_literal: true

require "etc"

module Bench
  # What the scenarios read about a server from Linux's /proc: a process's CPU time (in clock
  # ticks, and per thread in nanoseconds), the CPU time of a whole process tree, resident
  # memory, and which processes of a server's process group serve requests. Plain functions,
  # used by Bench::Scenario, Bench::SlowReader, Bench::IdleMemory and Bench::Runner; owns
  # nothing.
  module ProcFS
    # /proc/<pid>/stat counts CPU time in these ticks (usually 100 a second, so 10 ms steps).
    TICKS_PER_SECOND = Etc.sysconf(Etc::SC_CLK_TCK)

    # utime + stime of every thread of pid, live or ended, in seconds (proc(5): fields 14, 15).
    def self.cpu_seconds(pid)
      fields = after_comm(File.read("/proc/#{pid}/stat"))
      (Integer(fields[14 - 3]) + Integer(fields[15 - 3])).fdiv(TICKS_PER_SECOND)
    end

    # CPU time of pid and every process under it (a master and its workers, nginx's workers),
    # in seconds: utime + stime of each, plus cutime + cstime (proc(5): fields 14 to 17), so
    # that a child that exits and is reaped between two readings still counts, in its
    # parent's cutime. Only the difference between two readings means anything: the cutime of
    # the first one holds whatever ran before (`bundle exec`'s own children, for one).
    def self.tree_cpu_seconds(pid)
      ticks = {}
      tree(pid) { |child, fields| ticks[child] = (14..17).sum { |n| Integer(fields[n - 3]) } }
        .sum { |p| ticks[p] }.fdiv(TICKS_PER_SECOND)
    end

    # VmRSS of pid and every process under it, in KiB (what 10,000 idle WebSockets
    # cost a server, whatever its processes: Falcon's supervisor and worker, UP!'s worker).
    # A process that ends meanwhile counts as 0.
    def self.tree_rss_kb(pid)
      tree(pid).sum do |p|
        rss_kb(p)
      rescue SystemCallError
        0
      end
    end

    # pid and the processes under it, from /proc/*/stat, parents first; yields (pid, fields)
    # for each process seen, to read more of its stat line at the same moment. Raises
    # Errno::ESRCH when pid is gone.
    def self.tree(pid)
      parents = {}
      Dir.glob("/proc/[0-9]*/stat").each do |path|
        fields = after_comm(File.read(path))
        child = File.basename(File.dirname(path)).to_i
        parents[child] = fields[4 - 3].to_i
        yield child, fields if block_given?
      rescue SystemCallError
        next # it ended while we looked
      end
      raise Errno::ESRCH, "no process #{pid}" unless parents.key?(pid)

      tree = [pid]
      tree.each { |p| tree.concat(parents.select { |_, parent| parent == p }.keys) }
      tree
    end

    # Nanoseconds each live thread of pid has run, by thread id (the first field of
    # /proc/PID/task/TID/schedstat): finer than the ticks of #cpu_seconds, but blind to threads
    # that have ended, so compare the thread ids of two readings.
    def self.thread_cpu_ns(pid)
      Dir.glob("/proc/#{pid}/task/*/schedstat").each_with_object({}) do |path, times|
        times[File.basename(File.dirname(path)).to_i] = Integer(File.read(path).split.first)
      rescue SystemCallError
        next # the thread ended while we looked
      end
    end

    # VmRSS of pid in KiB.
    def self.rss_kb(pid)
      File.read("/proc/#{pid}/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i
    end

    # The processes of process group pgid that have no child in it: the ones that serve
    # (UP! -w 1 is one process; nginx's worker, not its master; no `bundle exec` wrapper).
    def self.workers(pgid)
      members = {}
      Dir.glob("/proc/[0-9]*/stat").each do |path|
        fields = after_comm(File.read(path))
        members[File.basename(File.dirname(path)).to_i] = fields[1].to_i if fields[2].to_i == pgid
      rescue SystemCallError
        next # it ended while we looked
      end
      parents = members.values
      members.keys.reject { |pid| parents.include?(pid) }.sort
    end

    # The fields of a stat line after "(comm)", so that field n of proc(5) is at index n - 3
    # (a process name may hold spaces and parentheses, hence the last ")").
    def self.after_comm(text)
      text[(text.rindex(")") + 2)..].split
    end
    private_class_method :after_comm
  end
end
