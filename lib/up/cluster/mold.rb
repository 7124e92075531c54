# frozen_string_literal: true

require "socket"
require_relative "../runner"

module Up
  class Cluster < Runner
    # The template of --refork-after: a worker that served its share of requests, stopped
    # serving and now only forks the next workers, each a copy of its warmed memory (the app
    # loaded, its lazy objects made, its code JIT-compiled) shared copy-on-write. The worker
    # becomes one (Up::Cluster::Worker#run, when the master chose it) and #run never returns.
    #
    # It takes the master's orders on its order socket (SOCK_SEQPACKET: one message each, the
    # new worker's pipes attached as SCM_RIGHTS):
    #
    #   fork INDEX PHASE TITLE   fork worker INDEX; the reply is "forked PID" or "failed WHY"
    #
    # It forks twice, and the middle process exits at once: the worker, orphaned, becomes the
    # child of the master (a subreaper, Up::Cluster::Subreaper), which waits for it and signals
    # it as any other. TERM, INT or QUIT, or EOF on the check pipe (the master is gone), end it;
    # HUP (the master forwards it) reopens the log and loads the certificates again, so that
    # the workers it forks next start with the new ones.
    # It owns the order socket and its signal pipe; the block it is given makes a worker.
    class Mold
      MAX_ORDER = 4096

      # orders: its end of the order socket. signals: its Up::SignalPipe, trapping the stops.
      # check: the read end of the master's check pipe. sibling: called in the new process with
      # (index:, phase:, title:, pipe:, pubsub_link:, orders:), returns the Worker to run.
      def initialize(index:, orders:, signals:, check:, log:, hooks:, tls: nil, &sibling)
        @index = index
        @tls = tls
        @orders = orders
        @signals = signals
        @check = check
        @log = log
        @hooks = hooks
        @sibling = sibling
      end

      # title: its process title.
      def run(title)
        Process.setproctitle(title)
        # The garbage of the requests served goes once here, not in every worker after its
        # fork. No compaction: moving every object would write the pages the template still
        # shares with the master (bench/refork_memory measured more memory in all with it).
        GC.start
        hook(:before_refork, @index)
        @orders.sendmsg("ready")
        serve_orders
        exit!(0)
      rescue Exception => e # rubocop:disable Lint/RescueException
        @log.call("template (pid #{Process.pid}) failed: #{e.full_message(highlight: false, order: :top)}")
        exit!(1)
      end

      private

      def serve_orders
        loop do
          ready, = IO.select([@orders, @signals.reader, @check])
          # Signals first, even those whose byte came after the select woke: the master sends
          # HUP before it asks for a worker, which must start with the reopened log.
          return if on_signals(@signals.take)
          return if ready.include?(@check) && @check.read_nonblock(1, exception: false).nil?
          next unless ready.include?(@orders)

          data, _, _, rights = @orders.recvmsg_nonblock(MAX_ORDER, 0, nil, scm_rights: true, exception: false)
          next if data == :wait_readable
          return if data.nil? || data.empty? # the master is gone

          @orders.sendmsg(take(data, rights ? rights.unix_rights : []))
        end
      end

      # True for a stop.
      def on_signals(names)
        return true if names.intersect?(SignalPipe::STOPS)

        if names.include?("HUP")
          @log.reopen
          @tls&.reload(nil, "template")
        end
        false
      end

      # The reply to one order; the IOs that came with it are closed here once the worker
      # has them.
      def take(data, ios)
        verb, index, phase, title = data.split(" ", 4)
        return "failed unknown order #{verb.inspect}" unless verb == "fork" && ios.size == 3 && title

        pid = fork_twice(Integer(index), Integer(phase), title, *ios)
        pid ? "forked #{pid}" : "failed the fork did not start a worker"
      rescue SystemCallError, ArgumentError => e
        "failed #{e.message}"
      ensure
        ios.each { |io| io.close unless io.closed? }
      end

      def fork_twice(index, phase, title, pipe, link, orders)
        reader, writer = IO.pipe
        middle = fork do
          reader.close
          pid = fork do
            writer.close
            @sibling.call(index: index, phase: phase, title: title, pipe: pipe,
                          pubsub_link: UNIXSocket.for_fd(link.tap { |io| io.autoclose = false }.fileno),
                          orders: UNIXSocket.for_fd(orders.tap { |io| io.autoclose = false }.fileno)).run
          end
          writer.write(pid.to_s)
          exit!(0)
        rescue SystemCallError
          exit!(1)
        end
        writer.close
        pid = reader.read.to_i
        Process.wait(middle)
        pid.positive? ? pid : nil
      ensure
        [reader, writer].each { |io| io&.close unless io&.closed? }
      end

      def hook(name, *args)
        @hooks.run(name, *args)
      rescue StandardError, ScriptError => e
        @log.call("#{name} hook failed in the template: #{e.full_message(highlight: false, order: :top)}")
      end
    end
  end
end
