# frozen_string_literal: true

require "etc"

module Up
  # The resident memory of a process, from Linux's /proc/PID/statm (its second field, in
  # pages). Read by the metrics endpoint (per worker) and the master's --worker-max-rss check.
  module ProcessMemory
    PAGE_SIZE = Etc.sysconf(Etc::SC_PAGESIZE)

    # Bytes, or nil when the process is gone or /proc is not there.
    def self.rss(pid)
      Integer(File.read("/proc/#{pid}/statm").split[1], 10) * PAGE_SIZE
    rescue SystemCallError, ArgumentError, TypeError
      nil
    end
  end
end
