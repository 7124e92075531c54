# frozen_string_literal: true

module Up
  # Whether a pid names a running process, for a pid file's or a state file's pid. A process of
  # another user is running too: signal 0 reaches it only to be refused.
  module ProcessAlive
    def self.alive?(pid)
      Process.kill(0, pid)
      true
    rescue Errno::ESRCH
      false
    rescue Errno::EPERM
      true
    end
  end
end
