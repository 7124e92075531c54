# frozen_string_literal: true

module Up
  # The server log: one timestamped line per message, flushed at once, on stderr or the -l
  # file. Shared by Up::Server (app errors) and Up::Cluster (worker life cycle).
  class Log
    def initialize(io = $stderr)
      @io = io
    end

    def call(message)
      @io.write("[#{Time.now.utc.strftime("%Y-%m-%dT%H:%M:%S.%3NZ")}] #{message}\n")
      @io.flush
    rescue IOError, SystemCallError
      nil
    end
  end
end
