# frozen_string_literal: true

require_relative "link_frame"

module Up
  module PubSub
    # A worker's end of its pub/sub link to the master (Up::PubSub::LinkFrame): publishes and
    # first/last subscriptions go up, messages for this worker come down and are fanned out to
    # its subscribers by its server (Up::Server#publish_local, in C: a frame encoded once for
    # all of them). Up::Cluster::Worker makes it with the socket it inherited and sets it as
    # Up::PubSub.cluster_link; it owns the socket and a reader thread.
    class WorkerLink
      def initialize(socket, log)
        @socket = socket
        @log = log
        @lock = Mutex.new
        @server = nil
      end

      def master?
        false
      end

      # Starts reading for server. Messages that came before it serves wait in the socket.
      def start(server)
        @server = server
        @reader = Thread.new { read_loop }
        @reader.report_on_exception = false
      end

      def publish(channel, message)
        send_frame(LinkFrame.pack("P", channel, message))
      end

      def engine_publish(number, channel, message)
        send_frame(LinkFrame.pack("E", channel, message, engine: number))
      end

      def interest(channel, match, on)
        flags = (on ? 1 : 0) | (match ? 2 : 0)
        send_frame(LinkFrame.pack("I", channel, flags: flags))
      end

      def close
        @reader&.kill
        @socket.close unless @socket.closed?
      end

      private

      # From app threads: one frame at a time, whole.
      def send_frame(bytes)
        @lock.synchronize { @socket.write(bytes) }
        true
      rescue IOError, SystemCallError => e
        @log.call("pub/sub link to the master failed: #{e.message}")
        false
      end

      def read_loop
        frames = LinkFrame::Reader.new
        loop do
          frames.feed(@socket.readpartial(65_536)) do |frame|
            @server.publish_local(frame.a, frame.b) if frame.type == "D"
          end
        end
      rescue EOFError, IOError, SystemCallError
        nil # the master is gone: the check pipe stops this worker
      end
    end
  end
end
