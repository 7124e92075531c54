# frozen_string_literal: true

require "json"
require_relative "../runner"
require_relative "../pub_sub/link_frame"

module Up
  class Cluster < Runner
    # The master's view of one worker process: its index and pid, the phase (code generation)
    # it was forked in, the read end of its pipe (the worker writes a "booted" line once it
    # serves, then a line of its stats as JSON every few seconds: its heartbeat), when it
    # last did and what it said, and whether the master has asked it to stop. Up::Cluster
    # creates one per fork, or one per worker of the previous image after a USR2 re-exec
    # (inherited: no pipe, not watched, never replaced). It owns the pipe's read end; the
    # process itself is Up::Cluster::Worker.
    class WorkerHandle
      BOOTED = "booted\n"
      # A status line is a few hundred bytes; a longer run without a newline is not ours.
      MAX_LINE = 65_536

      attr_reader :index, :pid, :phase, :pipe, :last_checkin, :term_sent_at, :started_at, :last_status,
                  :link, :link_frames, :link_out, :link_interests

      # link: the master's end of the worker's pub/sub link (Up::Cluster::PubSubHub reads and
      # writes it; the handle keeps its frames, what waits to be written, and the channels the
      # worker told of).
      def initialize(index:, pid:, phase:, pipe: nil, link: nil, now: Process.clock_gettime(Process::CLOCK_MONOTONIC))
        @index = index
        @pid = pid
        @phase = phase
        @pipe = pipe
        @link = link
        @link_frames = PubSub::LinkFrame::Reader.new
        @link_out = +"".b
        @link_interests = []
        @booted = false
        @last_checkin = now
        @term_sent_at = nil
        @killed = false
        @started_at = Time.now
        @last_status = {}
        @buffer = +""
      end

      # A worker of the previous image, from UP_OLD_WORKERS ("pid:index:phase").
      def self.inherited(entry)
        pid, index, phase = entry.split(":").map { |n| Integer(n) }
        new(index: index, pid: pid, phase: phase).tap(&:inherited!)
      end

      def to_env
        "#{@pid}:#{@index}:#{@phase}"
      end

      def inherited!
        @inherited = true
        @booted = true
      end

      def inherited?
        @inherited == true
      end

      def booted?
        @booted
      end

      def stopping?
        !@term_sent_at.nil? || @killed
      end

      def killed?
        @killed
      end

      # Reads what the worker wrote: anything is a check-in; a "booted" line says it serves, a
      # JSON line is its stats. Returns true when it just booted. At EOF (the worker is gone or
      # going) it closes the pipe.
      def read(now)
        data = @pipe.read_nonblock(4096, exception: false)
        if data.nil?
          close
          return false
        end
        return false if data == :wait_readable

        take(data, now)
      end

      # The worker was reaped: what it wrote before it died still counts (a "booted" line the
      # master's loop had not read yet means it did boot), then the pipe closes.
      def drain(now)
        while @pipe
          data = @pipe.read_nonblock(4096, exception: false)
          break if data == :wait_readable

          data.nil? ? close : take(data, now)
        end
        close
      end

      def parse_status(line)
        JSON.parse(line, symbolize_names: true)
      rescue JSON::ParserError
        @last_status
      end

      # True when a watched worker has been silent for longer than timeout seconds.
      def timed_out?(now, timeout)
        !inherited? && !@killed && @pipe && now - @last_checkin > timeout
      end

      def term!(now)
        @term_sent_at ||= now
        signal(:TERM)
      end

      def kill!
        @killed = true
        signal(:KILL)
      end

      def signal(name)
        Process.kill(name, @pid)
      rescue Errno::ESRCH
        nil
      end

      def close
        @pipe&.close unless @pipe&.closed?
        @pipe = nil
      end

      def close_link
        @link&.close unless @link&.closed?
        @link = nil
        @link_out.clear
      end

      private

      def take(data, now)
        @last_checkin = now
        @buffer << data
        booted = false
        while (line = @buffer.slice!(/\A[^\n]*\n/))
          if line == BOOTED
            booted = !@booted
            @booted = true
          else
            @last_status = parse_status(line)
          end
        end
        @buffer.clear if @buffer.bytesize > MAX_LINE
        booted
      end
    end
  end
end
