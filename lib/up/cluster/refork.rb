# frozen_string_literal: true

require "socket"
require_relative "../runner"
require_relative "../start_error"
require_relative "subreaper"

module Up
  class Cluster < Runner
    # --refork-after: the master's side of reforking. Once a worker of the newest generation
    # has served the next threshold's requests, the master asks it (over its order socket) to
    # become the template: it stops serving as a TERM would, then, instead of exiting, turns
    # into an Up::Cluster::Mold and says "ready". From then on every worker the master starts
    # (a replacement, TTIN, the rolling replacement of the previous generation, a
    # --worker-max-rss replacement) is forked by the template, and the previous template
    # exits. Each threshold is used once, in order.
    #
    # Up::Cluster creates one when the setting is given and calls it from its loop: #check to
    # choose, #read when the chosen worker writes, #fork_worker from its spawn, #reaped for
    # every process it waits for, #stop and #finish when it stops. It owns the master's end of
    # every worker's order socket and of the template's.
    class Refork
      # The template answers a fork order within this, or the master forks the worker itself.
      FORK_TIMEOUT = 10
      # A chosen worker stops serving within --shutdown-timeout; it has this much more to say
      # it is ready before it is killed (and replaced as a worker that died).
      PROMOTE_GRACE = 5

      attr_reader :count

      def initialize(thresholds, shutdown_timeout, log)
        @thresholds = thresholds
        @promote_limit = shutdown_timeout + PROMOTE_GRACE
        @log = log
        @count = 0
        @orders = {}
        @chosen = nil
        @template = nil
        @leaving = [] # templates told to exit, not yet waited for
      end

      # Raises StartError where no subreaper can be had: the master could not wait for the
      # workers the template forks.
      def start
        return if Subreaper.enable

        raise StartError, "--refork-after needs Linux (the master must be a child subreaper)"
      end

      def template_pid
        @template&.fetch(:pid)
      end

      # A new order socket: [the master's end, the worker's end].
      def channel
        UNIXSocket.pair(:SEQPACKET)
      end

      # pid: a worker just forked; orders: the master's end of its order socket.
      def add(pid, orders)
        @orders[pid] = orders
      end

      # The master's ends, which no worker keeps.
      def ios
        [*@orders.values, @template&.fetch(:orders)].compact
      end

      # What the loop waits on: the chosen worker's order socket, until it is ready.
      def readers
        @chosen ? [@orders[@chosen[:handle].pid]].compact : []
      end

      def reader?(io)
        readers.any? { |r| r.equal?(io) }
      end

      # Chooses the worker that becomes the next template: one of the newest phase, serving,
      # that has served the next threshold's requests (the one that served most). Not while a
      # rolling replacement is under way (rolling); a chosen worker that has not become the
      # template in time is killed.
      def check(handles, phase, rolling, now, title)
        return expire(now) if @chosen
        return if rolling || (threshold = @thresholds[@count]).nil?

        chosen = handles.select do |h|
          h.booted? && !h.stopping? && !h.inherited? && h.phase == phase && h.last_status[:requests].to_i >= threshold
        end.max_by { |h| h.last_status[:requests].to_i }
        return unless chosen && (orders = @orders[chosen.pid])

        orders.sendmsg("promote #{title}")
        @chosen = { handle: chosen, at: now, threshold: threshold }
      rescue SystemCallError, IOError
        nil # it is gone; the loop reaps it
      end

      # The chosen worker wrote: returns its handle once it is the template (the master then
      # drops it from its workers and replaces the previous generation), else nil.
      def read
        handle = @chosen[:handle]
        message = @orders[handle.pid].recv_nonblock(64, exception: false)
        return nil if message == :wait_readable
        return chosen_failed("closed its order socket") unless message == "ready"

        promoted(handle, @orders.delete(handle.pid))
        handle
      end

      # Forks worker index from the template, handing it ios (its pipe, pub/sub link and
      # order socket ends). Returns its pid, or nil when there is no template or it did not
      # answer (it is then stopped, and the master forks its workers again).
      def fork_worker(index, phase, title, ios)
        return nil unless @template

        orders = @template[:orders]
        orders.sendmsg("fork #{index} #{phase} #{title}", 0, nil, Socket::AncillaryData.unix_rights(*ios))
        reply = orders.wait_readable(FORK_TIMEOUT) && orders.recv(256)
        pid = reply.to_s[/\Aforked (\d+)\z/, 1]
        return Integer(pid) if pid

        drop("did not fork worker #{index} (#{reply ? reply.delete_prefix("failed ") : "no answer"})")
        nil
      rescue SystemCallError, IOError => e
        drop("did not fork worker #{index} (#{e.message})")
        nil
      end

      # HUP: the template reopens the log and loads the certificates again.
      def forward(signal)
        Process.kill(signal, template_pid) if @template
      rescue Errno::ESRCH
        nil
      end

      # The master waited for pid: whatever it was to us is over.
      def reaped(pid)
        @orders.delete(pid)&.close
        chosen_failed("exited") if @chosen && @chosen[:handle].pid == pid
        @leaving.delete(pid)
        return unless template_pid == pid

        @template[:orders].close
        @template = nil
        @log.call("template (pid #{pid}) exited; the next workers fork from the master")
      end

      # The master stops, re-executes or will load the code again (why, for the log, when the
      # master goes on): the template exits, and no worker is chosen any more.
      def stop(why = nil, signal: :TERM)
        @log.call("#{why}: the template (pid #{template_pid}) exits; the next workers fork from the master") if why && @template
        @thresholds, @chosen = [], nil unless why
        retire(signal)
      end

      # After the master's loop: waits for the templates told to exit (killed after timeout
      # seconds), so that the master leaves no process behind.
      def finish(timeout)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
        @leaving.dup.each do |pid|
          until Process.wait(pid, Process::WNOHANG)
            Process.kill(:KILL, pid) if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
            sleep 0.01
          end
        rescue Errno::ECHILD, Errno::ESRCH
          nil
        ensure
          @leaving.delete(pid)
        end
      end

      private

      def promoted(handle, orders)
        old = template_pid
        retire(:TERM)
        @template = { pid: handle.pid, orders: orders }
        @count += 1
        @log.call("refork: worker #{handle.index} (pid #{handle.pid}) served #{@chosen[:threshold]}+ requests; " \
                  "it is the template of generation #{@count} and the next workers fork from it" \
                  "#{" (template pid #{old} exits)" if old}")
        @chosen = nil
      end

      def expire(now)
        return unless now - @chosen[:at] > @promote_limit

        handle = @chosen[:handle]
        chosen_failed("did not become the template within #{@promote_limit} s; killing it")
        handle.kill!
      end

      # The chosen worker will not be the template; this threshold is tried again with the
      # next worker that reaches it.
      def chosen_failed(what)
        handle = @chosen[:handle]
        @chosen = nil
        @log.call("refork: worker #{handle.index} (pid #{handle.pid}) #{what}; no new template")
        nil
      end

      def drop(why)
        @log.call("template (pid #{template_pid}) #{why}; stopping it, the next workers fork from the master")
        retire(:KILL)
      end

      # The template is told to exit (its order socket's EOF tells it too) and is no longer
      # used; the master still waits for it.
      def retire(signal)
        return unless @template

        pid = @template[:pid]
        @template[:orders].close
        @template = nil
        @leaving << pid
        Process.kill(signal, pid)
      rescue Errno::ESRCH
        nil
      end
    end
  end
end
