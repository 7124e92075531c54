# frozen_string_literal: true

module Up
  # The server log: one timestamped line per message, flushed at once, on stderr or the -l
  # file. Up::Launcher creates it and owns the file; Up::Server (app errors), the runners and
  # the workers write to it, and its IO is also rack.errors. #reopen (HUP, for logrotate)
  # reopens the file in place, so everyone holding the IO writes to the new file.
  class Log
    attr_reader :io, :path

    # Opens path for appending; raises SystemCallError.
    def self.open(path)
      new(File.open(path, "a").tap { |f| f.sync = true }, path: path)
    end

    def initialize(io = $stderr, path: nil)
      @io = io
      @path = path
    end

    # One line; a message that ends in a newline (a backtrace) gets no blank line after it.
    def call(message)
      @io.write("[#{Time.now.utc.strftime("%Y-%m-%dT%H:%M:%S.%3NZ")}] #{message.chomp}\n")
      @io.flush
    rescue IOError, SystemCallError
      nil
    end

    # Reopens the file by its name (logrotate has renamed the old one). False when the log is
    # not a file of ours (stderr), or when the file cannot be opened: then it goes on writing
    # to the old one.
    def reopen
      return false unless @path

      @io.reopen(@path, "a")
      @io.sync = true
      true
    rescue IOError, SystemCallError => e
      call("cannot reopen #{@path}: #{e.message}; still writing to the old file")
      false
    end
  end
end
