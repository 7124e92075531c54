# frozen_string_literal: true

require "socket"
require_relative "runner"
require_relative "cluster/worker_handle"
require_relative "cluster/worker"
require_relative "cluster/pub_sub_hub"
require_relative "cluster/memory_limit"
require_relative "cluster/refork"

module Up
  # The master process of -w N (N > 1). Created by Up::Launcher on sockets it has bound, it
  # loads the app once (unless --no-preload), forks N workers (Up::Cluster::Worker) that serve
  # it on those sockets, and supervises them from one loop; it serves no request itself. It
  # owns the workers (an Up::Cluster::WorkerHandle each), its signal pipe and the check pipe
  # whose EOF tells workers the master is gone; not the sockets, log or pid file.
  #
  # The traps only write a byte; the loop (#supervise) does the work:
  #
  #   INT, TERM   graceful stop: workers stop accepting and finish requests in flight within
  #               --shutdown-timeout (then they are killed); exit status 0. With --stop-delay,
  #               /ready turns 503 at once and the workers serve on for that long first (a
  #               second INT or TERM cuts it short)
  #   QUIT        immediate stop: workers are killed
  #   USR2        hot restart: #run returns :restart and the launcher re-executes the master
  #               in place (same pid), the sockets and the workers' check pipe kept open; the
  #               new image loads the app again, forks new workers, and once they all serve
  #               lets the old ones drain (UP_OLD_WORKERS, UP_OLD_CHECK_FDS)
  #   USR1        phased restart (--no-preload): one worker at a time, a new one is forked,
  #               loads the app's current code, and once it serves the old one drains; with
  #               preload it logs that and does a hot restart instead
  #   HUP         reopen the log file, here and in every worker, and the workers' access log;
  #               the workers and this master load the certificates again
  #   TTIN, TTOU  one worker more, one fewer (never below one)
  #   ACME        (posted by the Up::Acme::Renewer of --acme-domain, no signal) a new
  #               certificate: this master and the workers load it, as HUP has them do
  #
  # A worker that exits is replaced at once; one that exits before it served (it failed to
  # boot) after a back-off that doubles with each failure in a row. One that writes nothing
  # to its pipe for --worker-timeout seconds (hung, or stopped) is killed and replaced. One past
  # --worker-max-rss is stopped gracefully and replaced (Up::Cluster::MemoryLimit). With
  # --refork-after, a worker that served its share becomes the template the next workers fork
  # from, and the older ones are replaced one at a time (Up::Cluster::Refork).
  class Cluster < Runner
    SIGNALS = %w[INT TERM QUIT HUP USR1 USR2 TTIN TTOU CHLD].freeze
    ENV_OLD_WORKERS = "UP_OLD_WORKERS"
    ENV_OLD_CHECKS = "UP_OLD_CHECK_FDS"
    # Back-off before the next try after the first boot failure in a row; it doubles, to MAX.
    BOOT_BACKOFF = 0.5
    BOOT_BACKOFF_MAX = 30
    # A worker asked to stop gets --shutdown-timeout plus this before it is killed.
    KILL_GRACE = 5
    # The loop wakes at least this often, events or not.
    MAX_WAIT = 5

    def initialize(options, **rest)
      super
      @handles = []
      @old_checks = []
      @worker_count = options[:workers]
      @phase = 0
      @boot_failures = Hash.new(0)
      @spawned = Hash.new(0) # forks per index: the first, then restarts
      @respawn_at = {}
      @state = :running # then :stopping or :restarting
      @phasing = false
      @memory_limit = MemoryLimit.new(options[:worker_max_rss], @log) if options[:worker_max_rss].positive?
      @refork = Refork.new(options[:refork_after], options[:shutdown_timeout], @log) unless options[:refork_after].empty?
      @looped_at = now
    end

    def run
      @signals = SignalPipe.new.trap(*SIGNALS)
      @check_r, @check_w = IO.pipe
      @refork&.start
      adopt_old_workers
      start_redis
      @app = preload
      Process.setproctitle(title("master"))
      @log.call(banner.to_s)
      @log.call("UP! #{VERSION} master #{Process.pid} listening on #{@binder.urls.join(", ")} " \
                "(workers #{@worker_count}, threads #{@options[:threads]}#{", no preload" unless @options[:preload]})")
      @log.call(HTTP2_MISSING) if @options[:http2] && !Server::HTTP2
      start_control
      @acme&.start { @signals.post("ACME") }
      @lifecycle.start_pulses { [healthy?, status_text] }
      @hub = PubSubHub.new(@handles, @log)
      PubSub.cluster_link = @hub
      hook(:before_fork)
      supervise
      @refork&.finish(KILL_GRACE)
      @acme&.stop
      stop_control
      stop_redis
      return :restart if @state == :restarting

      @log.call("stopped")
      :stop
    end

    # For the control endpoint, in the shape of Puma's: the master, then each worker as it last
    # reported (Up::Server#stats, sent with its heartbeat). Another thread calls it, so it
    # reads a copy of the worker list.
    def stats
      handles = @handles.dup
      stats_header.merge(
        pid: Process.pid, workers: @worker_count, phase: @phase,
        booted_workers: handles.count { |h| h.booted? && !h.stopping? },
        memory_replacements: @memory_limit&.replaced.to_i,
        reforks: @refork&.count.to_i, template_pid: @refork&.template_pid,
        old_workers: handles.count { |h| h.phase < @phase },
        pubsub: PubSub.stats.merge(dropped_for_workers: @hub&.dropped.to_i),
        worker_status: handles.sort_by(&:index).map { |h| worker_status(h) }
      )
    end

    # Graceful stop from another thread (rackup's shutdown with -O workers=N).
    def stop
      @signals&.post("TERM")
    end

    # The check pipe stays open across the re-exec, so the workers serve on until the new
    # image has its own up; it and the workers are named in the environment.
    def exec_env
      checks = [@check_w, *@old_checks]
      checks.each { |io| io.close_on_exec = false }
      { ENV_OLD_WORKERS => @handles.map(&:to_env).join(","), ENV_OLD_CHECKS => checks.map(&:fileno).join(",") }
    end

    def exec_fds
      [@check_w, *@old_checks].map(&:fileno)
    end

    private

    # ---------------------------------------------------------------- the loop

    def supervise
      loop do
        @looped_at = now
        stop_gracefully("TERM") if @stop_at && @state == :running && @looped_at >= @stop_at
        spawn_missing
        advance_phase
        watch_workers
        # READY=1 once every index serves; after a hot restart, once the old workers are gone.
        @lifecycle.serving(status_text) if all_serving? && @handles.none?(&:inherited?)
        break if @state == :restarting || (@state == :stopping && @handles.empty?)

        wait
      end
    end

    # Sleeps until a signal, a worker's byte, or the next deadline (a respawn, a timeout).
    def wait
      links = @handles.filter_map(&:link)
      writing = @handles.reject { |h| h.link.nil? || h.link_out.empty? }.map(&:link)
      ready, writable = IO.select([@signals.reader, *@handles.filter_map(&:pipe), *links, *@refork&.readers], writing, nil,
                                  wait_time)
      t = now
      ready&.each do |io|
        if io.equal?(@signals.reader)
          @signals.take.each { |signal| on_signal(signal) }
        elsif @refork&.reader?(io)
          (handle = @refork.read) && template_ready(handle)
        elsif (handle = @handles.find { |h| h.link.equal?(io) })
          @hub.read(handle)
        elsif (handle = @handles.find { |h| h.pipe.equal?(io) }) && handle.read(t)
          on_booted(handle)
        end
      end
      writable&.each { |io| (handle = @handles.find { |h| h.link.equal?(io) }) && @hub.flush(handle) }
      reap
    end

    # Until the next thing due: a respawn after a back-off, a heartbeat deadline, the end of a
    # stopping worker's grace. Nothing already past counts (a killed worker not yet reaped, a
    # back-off for an index that is served meanwhile), or the loop would spin.
    def wait_time
      t = now
      times = [t + MAX_WAIT, *@respawn_at.values, *@stop_at]
      @handles.each do |h|
        next if h.killed?

        times << h.last_checkin + @options[:worker_timeout] if h.pipe && !h.inherited? && !h.stopping?
        times << h.term_sent_at + @options[:shutdown_timeout] + KILL_GRACE if h.term_sent_at
      end
      (times.select { |time| time > t }.min - t) + 0.001
    end

    def on_signal(signal)
      case signal
      when "INT", "TERM" then stop_gracefully(signal)
      when "QUIT" then stop_now
      when "HUP" then reopen_logs(signal)
      when "ACME" then new_certificate
      when "CHLD" then nil # #wait reaps after every wake-up
      else
        return @log.call("#{signal}: ignored while stopping") unless @state == :running && @stop_at.nil?

        case signal
        when "USR2" then hot_restart(signal)
        when "USR1" then phased_restart
        when "TTIN" then more_workers
        when "TTOU" then fewer_workers
        end
      end
    end

    # ---------------------------------------------------------------- workers

    def spawn_missing
      return unless @state == :running

      t = now
      @worker_count.times do |index|
        next if @handles.any? { |h| h.index == index && !h.inherited? && !h.stopping? }
        next if @respawn_at.fetch(index, t) > t

        spawn(index)
      end
    end

    def worker_status(handle)
      checkin_age = now - handle.last_checkin
      {
        index: handle.index, pid: handle.pid, phase: handle.phase, booted: handle.booted?,
        started_at: handle.started_at.utc.iso8601, last_checkin: (Time.now - checkin_age).utc.iso8601,
        restarts: [@spawned[handle.index] - 1, 0].max, last_status: handle.last_status
      }
    end

    # Forks the worker for index. A fork that fails (out of processes or memory) is logged
    # and tried again after a back-off, like a worker that failed to boot: the master lives on.
    def spawn(index)
      reader, writer = IO.pipe
      link, worker_link = UNIXSocket.pair(:STREAM)
      orders, worker_orders = @refork&.channel
      others = [@check_w, *@old_checks, *@handles.filter_map(&:pipe), *@handles.filter_map(&:link),
                *@control&.sockets, *@metrics&.sockets, *@refork&.ios, orders].compact
      pid = @refork&.fork_worker(index, @phase, title("worker #{index}"), [writer, worker_link, worker_orders])
      pid ||= fork do
        reader.close
        link.close
        Worker.new(index: index, phase: @phase, pipe: writer, check: @check_r, master_signals: @signals,
                   close: others, options: @options, server_options: server_options(multiprocess: true),
                   sockets: @binder.sockets, tls: @tls, log: @log, hooks: @hooks, app: @app, load_app: @load_app,
                   title: title("worker #{index}"), pubsub_link: worker_link, orders: worker_orders).run
      end
      writer.close
      worker_link.close
      worker_orders&.close
      @refork&.add(pid, orders)
      @spawned[index] += 1
      @respawn_at.delete(index)
      @handles << WorkerHandle.new(index: index, pid: pid, phase: @phase, pipe: reader, link: link)
      hook(:after_worker_fork, index)
    rescue SystemCallError => e
      [reader, writer, link, worker_link, orders, worker_orders].each { |io| io&.close unless io&.closed? }
      @respawn_at[index] = now + BOOT_BACKOFF_MAX
      @log.call("cannot fork worker #{index}: #{e.message}; next try in #{BOOT_BACKOFF_MAX} s")
    end

    # Kills workers that went silent, and those that did not stop in time when asked.
    def watch_workers
      t = now
      @memory_limit&.check(@handles, t)
      @refork&.check(@handles, @phase, @phasing, t, @template_title ||= title("template")) if @state == :running && @stop_at.nil?
      @handles.each do |h|
        if !h.stopping? && h.timed_out?(t, @options[:worker_timeout])
          @log.call("worker #{h.index} (pid #{h.pid}) sent no heartbeat for #{@options[:worker_timeout]} s; killing it")
          h.kill!
        elsif h.term_sent_at && !h.killed? && t - h.term_sent_at > @options[:shutdown_timeout] + KILL_GRACE
          @log.call("worker #{h.index} (pid #{h.pid}) did not stop in time; killing it")
          h.kill!
        end
      end
    end

    def reap
      loop do
        pid, status = Process.wait2(-1, Process::WNOHANG)
        break unless pid

        @refork&.reaped(pid)
        handle = @handles.find { |h| h.pid == pid }
        next unless handle

        @handles.delete(handle)
        handle.drain(now)
        @hub&.worker_gone(handle)
        exited(handle, status)
      end
    rescue Errno::ECHILD
      nil
    end

    def exited(handle, status)
      i = handle.index
      if @state != :running || handle.term_sent_at || handle.inherited?
        @log.call("worker #{i} (pid #{handle.pid}) stopped")
      elsif handle.booted?
        @boot_failures.delete(i)
        @log.call("worker #{i} (pid #{handle.pid}) exited with #{status.inspect}; starting a new one")
      else
        boot_failed(handle, status)
      end
    end

    def boot_failed(handle, status)
      i = handle.index
      n = @boot_failures[i] += 1
      delay = [BOOT_BACKOFF * 2**(n - 1), BOOT_BACKOFF_MAX].min
      @respawn_at[i] = now + delay
      @log.call("worker #{i} (pid #{handle.pid}) failed to boot (#{status.inspect}; #{n} in a row); " \
                "next try in #{delay} s")
      return unless @phasing && handle.phase == @phase

      @phasing = false
      @log.call("phased restart stopped: workers not yet replaced keep serving the old code; " \
                "fix the app and send USR1 again")
    end

    def on_booted(handle)
      @boot_failures.delete(handle.index)
      release_old_workers
    end

    # --refork-after: the chosen worker is the template now, no longer a worker; a new phase
    # replaces the previous generation one at a time, each new worker forked by the template.
    def template_ready(handle)
      @handles.delete(handle)
      handle.close
      @hub&.worker_gone(handle)
      @phase += 1
      @phasing = true
    end

    # A worker of this image's phase serves at every index.
    def all_serving?
      (0...@worker_count).all? { |i| @handles.any? { |h| h.index == i && h.phase == @phase && h.booted? } }
    end

    # For the systemd watchdog (another thread): this loop goes round (it wakes at least every
    # MAX_WAIT) and a worker serves that beat lately.
    def healthy?
      t = now
      beat_limit = [@options[:worker_timeout] / 2.0, 3 * MAX_WAIT].min
      t - @looped_at < 2 * MAX_WAIT + 1 &&
        @handles.dup.any? { |h| h.booted? && !h.stopping? && !h.inherited? && t - h.last_checkin < beat_limit }
    end

    def status_text
      handles = @handles.dup
      serving = handles.count { |h| h.booted? && !h.stopping? }
      requests = handles.sum { |h| h.last_status[:requests].to_i }
      "workers #{serving}/#{@worker_count}, requests #{requests}"
    end

    # After a hot restart: once a new worker serves at every index, the previous image's
    # workers drain (EOF on their check pipe, and TERM).
    def release_old_workers
      old = @handles.select(&:inherited?)
      return if old.empty? && @old_checks.empty?
      return unless all_serving?

      @log.call("hot restart: #{@worker_count} new workers serve; #{old.size} old workers drain")
      @old_checks.each(&:close)
      @old_checks = []
      old.each { |h| h.term!(now) }
    end

    # ---------------------------------------------------------------- signals

    def stop_gracefully(signal)
      return if @state == :stopping
      return delay_stop(signal) if @options[:stop_delay].positive? && @stop_at.nil?

      @lifecycle.stopping
      @state = :stopping
      @phasing = false
      @log.call("#{signal}: stopping #{@handles.size} workers; requests in flight get " \
                "#{@options[:shutdown_timeout]} s")
      t = now
      @handles.each { |h| h.term!(t) }
      @refork&.stop
      @binder.shutdown
      @old_checks.each(&:close)
      @old_checks = []
    end

    # --stop-delay: not ready at once, so the load balancer stops sending, while the workers
    # go on accepting and answering; the loop stops them once the delay is over.
    def delay_stop(signal)
      @lifecycle.stopping
      @stop_at = now + @options[:stop_delay]
      @log.call("#{signal}: not ready; serving #{@options[:stop_delay]} s more before stopping (--stop-delay)")
    end

    def stop_now
      @lifecycle.stopping
      @state = :stopping
      @log.call("QUIT: stopping at once; killing #{@handles.size} workers")
      @handles.each(&:kill!)
      @refork&.stop(signal: :KILL)
      @binder.shutdown
    end

    # The master's certificates too: the workers forked from now on start with its copy.
    def reopen_logs(signal)
      reopen_log(signal)
      @tls&.reload(nil, "#{signal} (master)")
      return unless @log.path || @options[:access_log] || @tls

      @handles.each { |h| h.signal(:HUP) }
      @refork&.forward(:HUP)
    end

    # Posted by the Up::Acme::Renewer: the workers load the new certificate as HUP has them
    # do, and so does this master, whose copy the workers forked from now on start with.
    def new_certificate
      @tls.reload(nil, "ACME (master)")
      @handles.each { |h| h.signal(:HUP) }
    end

    def hot_restart(signal)
      @log.call("#{signal}: hot restart: re-executing the master in place (pid #{Process.pid}); " \
                "the workers serve until new ones are up")
      hook(:on_restart)
      @refork&.stop
      @lifecycle.reloading
      @state = :restarting
    end

    def phased_restart
      if @options[:preload]
        @log.call("USR1: a phased restart needs --no-preload (this master loaded the app, so new " \
                  "workers would fork the old code); doing a hot restart instead")
        return hot_restart("USR1")
      end
      return @log.call("USR1: a phased restart is under way") if @phasing

      @refork&.stop("USR1")
      @phase += 1
      @phasing = true
      @log.call("USR1: phased restart: replacing #{@worker_count} workers one at a time (phase #{@phase})")
    end

    # One worker at a time: fork the new one for the lowest index still on an old phase;
    # once it serves, ask the old one to stop; once that has exited, the next index.
    def advance_phase
      return unless @phasing && @state == :running
      return if @handles.any? { |h| h.phase < @phase && h.stopping? && !h.inherited? }
      return if @handles.any? { |h| h.phase == @phase && !h.booted? }

      old = @handles.select { |h| h.phase < @phase && !h.stopping? && !h.inherited? }.min_by(&:index)
      return phase_done unless old

      fresh = @handles.find { |h| h.index == old.index && h.phase == @phase && !h.stopping? }
      if fresh
        @log.call("phased restart: worker #{old.index} (pid #{fresh.pid}) serves; pid #{old.pid} drains")
        old.term!(now)
      elsif @respawn_at.fetch(old.index, 0) <= now
        spawn(old.index)
      end
    end

    def phase_done
      @phasing = false
      @log.call("phased restart done: #{@worker_count} workers on phase #{@phase}")
    end

    def more_workers
      @worker_count += 1
      @log.call("TTIN: workers #{@worker_count}")
    end

    def fewer_workers
      return @log.call("TTOU: one worker left; not stopping it") if @worker_count == 1

      @worker_count -= 1
      @log.call("TTOU: workers #{@worker_count}")
      t = now
      @handles.each { |h| h.term!(t) if h.index >= @worker_count && !h.stopping? && !h.inherited? }
    end

    # ---------------------------------------------------------------- after a re-exec

    # The app, loaded here to be shared by the workers, or nil for --no-preload. If it fails
    # to load after a hot restart (a broken deploy), the old workers keep serving the code
    # they have: the new workers then load the app themselves and are retried with a back-off,
    # so fixing the code (or another USR2) finishes the restart. At a cold start the error
    # ends the process, as it would in single mode.
    def preload
      return nil unless @options[:preload]

      @load_app.call
    rescue StandardError, ScriptError => e
      raise if @handles.empty?

      @log.call("hot restart: the app does not load; the old workers keep serving: " \
                "#{e.full_message(highlight: false, order: :top)}")
      nil
    end

    # The previous image's workers (its children, so ours now) and the check pipes that keep
    # them serving; they are watched for exit only, never replaced.
    def adopt_old_workers
      workers = ENV.delete(ENV_OLD_WORKERS)
      checks = ENV.delete(ENV_OLD_CHECKS)
      return unless workers

      @handles = workers.split(",").map { |entry| WorkerHandle.inherited(entry) }
      @old_checks = checks.to_s.split(",").map { |fd| IO.for_fd(Integer(fd)).tap { |io| io.close_on_exec = true } }
      @phase = (@handles.map(&:phase).max || 0) + 1
      @log.call("hot restart: #{@handles.size} old workers serve until the new ones are up")
    end
  end
end
