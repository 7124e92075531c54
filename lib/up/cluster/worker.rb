# frozen_string_literal: true

require "json"
require "socket"
require_relative "../runner"
require_relative "../pub_sub/worker_link"
require_relative "mold"

module Up
  class Cluster < Runner
    # One worker process, from the fork to its exit: it drops what belongs to the master,
    # runs before_worker_boot, loads the app unless the master preloaded it, serves it on the
    # inherited sockets until told to stop, runs before_worker_shutdown and exits. Up::Cluster
    # creates it in the child right after fork and calls #run, which never returns. It owns
    # its Up::Server, the write end of its pipe to the master, and a control thread.
    #
    # The control thread does what the signals ask (the traps only write a byte) and beats:
    # it writes a line to the master every beat interval, its server's stats (Up::Server#stats,
    # for the control endpoint), or the master takes the worker for hung and kills it after
    # --worker-timeout. It is a Ruby thread, so a worker whose Ruby VM is stuck stops beating;
    # it holds the GVL only for one write, and when app threads hog the GVL it gets it back
    # within one time slice per busy thread (100 ms each), far below the timeout. EOF on the check pipe (the master is gone) stops the worker.
    #
    #   INT, TERM   graceful stop (the master sends TERM)
    #   QUIT        stop at once, requests in flight cut off
    #   HUP         reopen the log file and the access log, load the certificates again (the
    #               master forwards it)
    #
    # With --refork-after it also reads the master's order socket: "promote TITLE" makes it
    # stop serving as a TERM would and then, instead of exiting, become the template
    # (Up::Cluster::Mold) that the next workers fork from.
    class Worker
      SIGNALS = %w[INT TERM QUIT HUP].freeze
      # Signals meant for the master; a worker that gets them from a process-group kill
      # (kill -USR2 -PGID) ignores them rather than die or stop (TTIN/TTOU stop a process).
      IGNORED = %w[USR1 USR2 TTIN TTOU].freeze

      # index, phase: who it is. pipe: write end of its pipe to the master. check: read end of
      # the master's check pipe. master_signals: the master's Up::SignalPipe, whose handlers
      # run here until ours are in. close: master-only IOs to close. app: the preloaded app,
      # or nil to load it here with load_app. title: its process title. orders: its end of the
      # master's order socket (--refork-after), or nil.
      def initialize(index:, phase:, pipe:, check:, master_signals:, close:, options:, server_options:,
                     sockets:, log:, hooks:, app:, load_app:, title:, pubsub_link: nil, tls: nil, orders: nil)
        @index = index
        @orders = orders
        @tls = tls
        @pubsub_link = pubsub_link
        @title = title
        @phase = phase
        @pipe = pipe
        @check = check
        @master_signals = master_signals
        @close = close
        @options = options
        @server_options = server_options
        @sockets = sockets
        @log = log
        @hooks = hooks
        @app = app
        @load_app = load_app
      end

      def run
        @signals = signals = SignalPipe.new.trap(*SIGNALS)
        IGNORED.each { |name| Signal.trap(name, "IGNORE") }
        Signal.trap("CHLD", "DEFAULT")
        # A stop or a log reopen that came before our traps were in reached the master's
        # handler, which kept it.
        strays = @master_signals.strays
        @stop_asked = strays.intersect?(SignalPipe::STOPS)
        @master_signals.close
        reopen_log if strays.include?("HUP")
        @close.each { |io| io.close unless io.closed? }
        PubSub.after_fork
        PubSub.cluster_link = @pubsub_link && PubSub::WorkerLink.new(@pubsub_link, @log)
        Process.setproctitle(@title)
        control = Thread.new { control(signals) }
        hook(:before_worker_boot, @index)
        serve
        control.kill.join
        become_template if @promotion && !@stop_asked
        hook(:before_worker_shutdown, @index)
        exit!(0)
      rescue Exception => e # rubocop:disable Lint/RescueException
        # A failure to boot (a broken config.ru, a hook that raises) ends this worker, never
        # the master, which starts another after a back-off.
        @log.call("worker #{@index} (pid #{Process.pid}) failed: #{describe(e)}")
        exit!(1)
      end

      private

      # A config.ru that does not load (Up::StartError) in its one line, with the backtrace
      # of what it raised under --trace; anything else with its backtrace.
      def describe(error)
        return error.message if error.is_a?(StartError) && !@options[:trace]

        (error.cause || error).full_message(highlight: false, order: :top)
      end

      def serve
        @app ||= @load_app.call
        server = Server.new(@app, @server_options)
        server.logger = @log
        @sockets.each { |s| server.listen_fd(s.fileno, @tls&.context_for(s.fileno)) }
        @server = server
        PubSub.cluster_link&.start(server)
        server.stop if @stop_asked
        beat(WorkerHandle::BOOTED + status_line)
        @log.call("worker #{@index} booted (pid #{Process.pid})")
        server.run
      end

      def control(signals)
        interval = [@options[:worker_timeout] / 4.0, 5].min
        ios = [signals.reader, @check, @orders].compact
        loop do
          ready, = IO.select(ios, nil, nil, interval)
          beat(status_line)
          next unless ready

          signals.take.each { |signal| on_signal(signal) } if ready.include?(signals.reader)
          ios.delete(@orders) if ready.include?(@orders) && !take_order
          next unless ready.include?(@check) && @check.read_nonblock(1, exception: false).nil?

          # EOF: the master is gone (or a restarted master has its new workers up).
          ios.delete(@check)
          stop
        end
      end

      def on_signal(signal)
        case signal
        when "INT", "TERM" then stop
        when "QUIT" then stop(0)
        when "HUP"
          reopen_log
          @server&.reopen_access_log
          @tls&.reload(@server, "worker #{@index}")
        end
      end

      # The master's order (the only one a serving worker gets is "promote"); false at EOF.
      def take_order
        order = @orders.recv_nonblock(Mold::MAX_ORDER, exception: false)
        return true if order == :wait_readable
        return false if order.nil? || order.empty?

        verb, title = order.split(" ", 2)
        if verb == "promote" && !@stop_asked
          @promotion = title
          @server&.stop
        end
        true
      end

      # Chosen by the master, and stopped serving: from now on this process only forks the
      # next workers. What tied it to the master as a worker goes (its pipe's EOF tells the
      # master it no longer serves); the check pipe, the sockets and the order socket stay.
      def become_template
        @pipe.close if @pipe && !@pipe.closed?
        @pipe = nil
        @server = nil
        PubSub.cluster_link&.close
        PubSub.cluster_link = nil
        Mold.new(index: @index, orders: @orders, signals: @signals, check: @check, log: @log, hooks: @hooks,
                 tls: @tls) do |**worker|
          sibling(**worker)
        end.run(@promotion)
      end

      # A worker like this one, for the template to run in a process it forked: it gets the
      # app this one loaded, and it closes the template's end of the order socket.
      def sibling(index:, phase:, title:, pipe:, pubsub_link:, orders:)
        Worker.new(index: index, phase: phase, pipe: pipe, check: @check, master_signals: @signals, close: [@orders],
                   options: @options, server_options: @server_options, sockets: @sockets, log: @log, hooks: @hooks,
                   app: @app, load_app: @load_app, title: title, pubsub_link: pubsub_link, tls: @tls, orders: orders)
      end

      # Until the server exists (the app is loading) a stop is kept and done once it does.
      def stop(timeout = nil)
        @stop_asked = true
        timeout ? @server&.stop(timeout) : @server&.stop
      end

      # HUP: the log file was renamed (logrotate); the access log, when the server has one, is
      # reopened by the caller.
      def reopen_log
        @log.call("worker #{@index} reopened #{@log.path}") if @log.reopen
      end

      # The stats as one JSON line ("{}" while the app loads); short enough for one atomic
      # pipe write.
      def status_line
        "#{JSON.generate(@server ? @server.stats : {})}\n"
      end

      # One line to the master; a master that re-executed itself no longer reads this pipe
      # (EPIPE) and tells us to stop through the check pipe instead.
      def beat(line)
        return unless @pipe

        @pipe.write_nonblock(line, exception: false)
      rescue Errno::EPIPE, IOError
        @pipe = nil
      end

      def hook(name, *args)
        @hooks.run(name, *args)
      rescue StandardError, ScriptError => e
        @log.call("#{name} hook failed in worker #{@index}: #{e.full_message(highlight: false, order: :top)}")
      end
    end
  end
end
