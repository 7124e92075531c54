# frozen_string_literal: true

require_relative "systemd/notifier"

module Up
  # Where this server is in its life, as the outside sees it: starting, serving, stopping. The
  # runner (Up::Single, or the master of Up::Cluster) creates one and says when each begins;
  # it tells systemd (Up::Systemd::Notifier: READY=1, RELOADING=1, STOPPING=1, STATUS=,
  # WATCHDOG=1) and answers the readiness probe of the metrics endpoint (#ready?). It owns the
  # notifier and, under systemd, a thread that sends the status and the watchdog's pings.
  class Lifecycle
    # How often STATUS= is sent when no watchdog asks for more.
    STATUS_INTERVAL = 5

    def initialize(notifier = Systemd::Notifier.from_env)
      @notifier = notifier
      @state = :starting
    end

    # True from the moment the app serves until a stop begins: the load balancer may send.
    def ready?
      @state == :serving
    end

    def stopping?
      @state == :stopping
    end

    # The app serves (every worker has booted): READY=1, once per process image.
    def serving(status)
      return unless @state == :starting

      @state = :serving
      notify(READY: 1, STATUS: status)
    end

    # A hot restart begins: systemd waits for the READY=1 of the re-executed image. Still
    # ready: the old workers serve meanwhile.
    def reloading
      usec = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
      notify(RELOADING: 1, MONOTONIC_USEC: usec, STATUS: "restarting")
    end

    # A stop begins (or its --stop-delay): not ready from now on.
    def stopping
      return if @state == :stopping

      @state = :stopping
      notify(STOPPING: 1, STATUS: "stopping")
    end

    # Under systemd: a thread that sends STATUS= every few seconds and, with a watchdog
    # (WatchdogSec=), WATCHDOG=1 at half its period, only while the block answers healthy.
    # The block returns [healthy, status text]; it runs on that thread.
    def start_pulses(&probe)
      return unless @notifier

      interval = [@notifier.watchdog_interval, STATUS_INTERVAL].compact.min
      watchdog = !@notifier.watchdog_interval.nil?
      @pulses = Thread.new do
        loop do
          healthy, status = probe.call
          fields = { STATUS: status }
          fields[:WATCHDOG] = 1 if watchdog && healthy && !stopping?
          @notifier.notify(fields)
          sleep interval
        end
      end
      @pulses.report_on_exception = false
    end

    def stop_pulses
      @pulses&.kill&.join
      @pulses = nil
    end

    private

    def notify(fields)
      @notifier&.notify(fields)
    end
  end
end
