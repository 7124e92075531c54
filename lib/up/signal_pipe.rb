# frozen_string_literal: true

module Up
  # Signals as bytes in a pipe, so that a trap does no work (no logging, locking or forking):
  # its handler writes one byte, and a loop that waits on #reader takes the signals with
  # #take and acts on them. The master's loop (Up::Cluster) and the control thread of a
  # single process or a worker (Up::Single, Up::Cluster::Worker) each create one and own its
  # two ends.
  #
  # A forked worker runs its parent's handlers until it installs its own. A signal in that
  # window must not wake the parent (the worker holds a copy of the parent's pipe), so a
  # handler writes only in the process that installed it; in another it keeps the name of a
  # signal the worker acts on in #strays, and the worker acts on it once it can.
  #
  # ACME is no signal: #post writes it when a new certificate is in (Up::Acme::Renewer).
  class SignalPipe
    BYTES = { "INT" => "I", "TERM" => "T", "QUIT" => "Q", "HUP" => "H", "USR1" => "1", "USR2" => "2",
              "TTIN" => "+", "TTOU" => "-", "CHLD" => "C", "ACME" => "A" }.freeze
    NAMES = BYTES.invert.freeze
    STOPS = %w[INT TERM QUIT].freeze
    # The signals a forked worker keeps from its window without traps (a stop, a log reopen);
    # it drops the others, which only a master acts on.
    KEPT = [*STOPS, "HUP"].freeze

    # The kept signals that reached a forked process before its own traps, in order.
    attr_reader :reader, :strays

    def initialize
      @reader, @writer = IO.pipe
      @pid = Process.pid
      @strays = []
    end

    def trap(*signals)
      signals.each do |name|
        byte = BYTES.fetch(name)
        Signal.trap(name) do
          if Process.pid == @pid
            post(name, byte)
          elsif KEPT.include?(name)
            @strays << name
          end
        end
      end
      self
    end

    # As if the signal had come (Launcher#stop from another thread, for rackup's shutdown).
    def post(name, byte = BYTES.fetch(name))
      @writer.write_nonblock(byte, exception: false)
    rescue IOError
      nil # closed: whoever read it is done
    end

    # Names of the signals that came since the last call, in order (empty when none).
    def take
      bytes = @reader.read_nonblock(4096, exception: false)
      return [] unless bytes.is_a?(String)

      bytes.each_char.filter_map { |b| NAMES[b] }
    end

    def close
      [@reader, @writer].each { |io| io.close unless io.closed? }
    end
  end
end
