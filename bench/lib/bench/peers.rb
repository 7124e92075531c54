# frozen_string_literal: true

require "etc"
require_relative "apps"
require_relative "peer"
require_relative "up_defaults"

module Bench
  # Every row bench/run can measure, in table order, with the exact command line of each.
  # Each server gets one process that serves requests per worker (`-w 1` means one; masters
  # that only supervise are not counted) and its documented production-like concurrency, which
  # the mode column states. Ruby servers run under RACK_ENV=production (no dev middleware).
  module Peers
    CONFIG_DIR = File.expand_path("../../config", __dir__)

    # Threads for the threaded rows (UP! -t 5, puma the same). The "default" row gives UP!
    # no -t at all and states what its CLI defaults to (Bench::UpDefaults).
    THREADS = 5

    # nginx's worker_connections unless a scenario needs more (bench/idle_memory does).
    NGINX_CONNECTIONS = 1024

    # The apps nginx can stand in for, as what its config answers: content type and body.
    NGINX_ANSWERS = {
      "hello" => ["text/plain", '"Hello World"'],
      "json_const" => ["application/json", %('{"foo":"bar"}')]
    }.freeze

    def self.workers(count)
      count == 1 ? "1 worker" : "#{count} workers"
    end

    # "auto" (one per core) when that is the count asked for, as an nginx admin would write it.
    def self.nginx_workers(count)
      count == Etc.nprocessors && count > 1 ? "auto" : count.to_s
    end

    # Writes a template from bench/config into the run's directory, filled in by format.
    def self.write_config(template, path, **fields)
      File.write(path, format(File.read(File.join(CONFIG_DIR, template)), **fields))
      path
    end

    ALL = [
      # What a user gets without choosing: no -t (the targets are about this row).
      Peer.new(key: "up_default", group: "up", name: "UP!", runtime: :up,
               mode: ->(w) { "#{workers(w)}, default (`#{UpDefaults.threads_flag}`)" }) do |c|
        %W[bundle exec ruby exe/up_ruby -b 127.0.0.1 -p #{c.port} -w #{c.workers} #{c.app}] + c.up_args.to_a
      end,
      # One app thread, which runs the loop between its app calls (-t 0 means the same): the
      # row to read next to the one-thread peers.
      Peer.new(key: "up_thread", group: "up", name: "UP!", runtime: :up,
               mode: ->(w) { "#{workers(w)} × 1 thread (`-t 1`)" }) do |c|
        %W[bundle exec ruby exe/up_ruby -b 127.0.0.1 -p #{c.port} -w #{c.workers} -t 1 #{c.app}] + c.up_args.to_a
      end,
      # One app thread beside a native thread that runs the loop for good (--io-thread).
      Peer.new(key: "up_io_thread", group: "up", name: "UP!", runtime: :up,
               mode: ->(w) { "#{workers(w)} × 1 thread, `--io-thread -t 1`" }) do |c|
        %W[bundle exec ruby exe/up_ruby -b 127.0.0.1 -p #{c.port} -w #{c.workers} --io-thread -t 1 #{c.app}] +
          c.up_args.to_a
      end,
      Peer.new(key: "up_threads", group: "up", name: "UP!", runtime: :up,
               mode: ->(w) { "#{workers(w)} × #{THREADS} threads (`-t #{THREADS}`)" }) do |c|
        %W[bundle exec ruby exe/up_ruby -b 127.0.0.1 -p #{c.port} -w #{c.workers} -t #{THREADS} #{c.app}] +
          c.up_args.to_a
      end,
      # The default row with --metrics-url: request counters on and the metrics endpoint open
      # (docs/production.md); read beside up_default for what they cost.
      Peer.new(key: "up_metrics", name: "UP!", runtime: :up, apps: %w[hello],
               mode: ->(w) { "#{workers(w)}, default, `--metrics-url`" }) do |c|
        %W[bundle exec ruby exe/up_ruby -b 127.0.0.1 -p #{c.port} -w #{c.workers} --metrics-url tcp://127.0.0.1:0
           #{c.app}] + c.up_args.to_a
      end,
      # The Opal runtime: the app compiled to JavaScript, on Node's http module. Its
      # bundle is compiled on the first start and cached (bench/run's start waits for it).
      Peer.new(key: "up_node", group: "node", name: "UP! up_node", runtime: :up,
               mode: ->(w) { w == 1 ? "1 process (Opal on Node)" : "#{workers(w)} (node:cluster)" }) do |c|
        %W[bundle exec ruby exe/up_node -b 127.0.0.1 -p #{c.port} -w #{c.workers} #{c.app}]
      end,
      # `up`: the same bundle on Node, served by the UP! engine as a Node-API addon
      # on Node's libuv loop instead of Node's http module. One process only for now.
      Peer.new(key: "up_addon", group: "node", name: "UP! up", runtime: :up,
               mode: ->(w) { w == 1 ? "1 process (Opal on Node, engine addon)" : "#{workers(w)}" }) do |c|
        %W[bundle exec ruby exe/up -b 127.0.0.1 -p #{c.port} -w #{c.workers} #{c.app}]
      end,
      # agoo's CLI runs a .ru with its Ruby handler on one thread (thread_count 0); its C side
      # reads and writes sockets on threads of its own. It always binds -p on every address
      # (a -b bind is added to that, not used instead), so it is the one server not confined
      # to 127.0.0.1; the load still goes to 127.0.0.1 only. An app's args replace its rackup
      # file: with one, agoo's Rack handler asks the app before its directory whatever -f says
      # (it reads its own root_first default as the flag that turns it off), so the static
      # tables run it on the directory alone, as `agoo -d DIR` serves files.
      Peer.new(key: "agoo", name: "agoo", gem: "agoo", runtime: :peer,
               note: "listens on 0.0.0.0 (its CLI cannot bind one address only)",
               mode: ->(w) { "#{workers(w)}, app on 1 Ruby thread + C I/O threads" }) do |c|
        %W[bundle exec agoo -s -p #{c.port} -w #{c.workers}] + (c.args || [c.app])
      end,
      Peer.new(key: "falcon", name: "falcon", gem: "falcon", runtime: :peer,
               mode: ->(w) { "#{workers(w)} (forked), fibers" }) do |c|
        %W[bundle exec falcon serve --bind http://127.0.0.1:#{c.port} --forked -n #{c.workers}
           -c #{c.app}]
      end,
      Peer.new(key: "iodine", name: "iodine", gem: "iodine", runtime: :peer,
               mode: ->(w) { "#{workers(w)} × 1 thread" }) do |c|
        %W[bundle exec iodine -b 127.0.0.1 -p #{c.port} -w #{c.workers} -t 1] + c.args.to_a + [c.app]
      end,
      # An app's args name a directory for its static_assets middleware, which answers before
      # the app (bench/config/itsi_static.rb.template, given with -C).
      Peer.new(key: "itsi", name: "itsi", gem: "itsi-server", runtime: :peer,
               note: "answers 503 once 30 requests wait for its Ruby thread (its default backlog)",
               mode: ->(w) { "#{workers(w)} × 1 thread" }) do |c|
        config = if c.args
                   conf = write_config("itsi_static.rb.template", File.join(c.dir, "Itsi.rb"), root: c.args.first)
                   ["-C", conf]
                 end
        %W[bundle exec itsi serve -b http://127.0.0.1:#{c.port} -w #{c.workers} -t 1] + config.to_a + ["-r", c.app]
      end,
      # One worker is puma's single mode (-w 0: no master process), more is cluster mode.
      # The one-thread row sits next to UP! -t 1 and the one-thread peers.
      Peer.new(key: "puma_thread", group: "puma", name: "puma", gem: "puma", runtime: :peer,
               mode: ->(w) { w == 1 ? "single mode × 1 thread" : "#{workers(w)} × 1 thread" }) do |c|
        %W[bundle exec puma -b tcp://127.0.0.1:#{c.port} -w #{c.workers == 1 ? 0 : c.workers}
           -t 1:1 -e production -C - #{c.app}]
      end,
      Peer.new(key: "puma", name: "puma", gem: "puma", runtime: :peer,
               mode: lambda { |w|
                 w == 1 ? "single mode × #{THREADS} threads" : "#{workers(w)} × #{THREADS} threads"
               }) do |c|
        %W[bundle exec puma -b tcp://127.0.0.1:#{c.port} -w #{c.workers == 1 ? 0 : c.workers}
           -t #{THREADS}:#{THREADS} -e production -C - #{c.app}]
      end,
      Peer.new(key: "unicorn", name: "unicorn", gem: "unicorn", runtime: :peer,
               note: "no keep-alive: a new connection per request, which wrk counts as a read error " \
                     "when the response has no content-length",
               mode: ->(w) { "#{workers(w)}, 1 request at a time each" }) do |c|
        conf = write_config("unicorn.rb.template", File.join(c.dir, "unicorn.rb"), workers: c.workers)
        %W[bundle exec unicorn -c #{conf} -l 127.0.0.1:#{c.port} #{c.app}]
      end,
      Peer.new(key: "nginx", name: "nginx (limit)", runtime: :native, apps: NGINX_ANSWERS.keys, gem: "nginx",
               note: "`return 200` from its config, no app",
               mode: ->(w) { "worker_processes #{nginx_workers(w)}" }) do |c|
        user = Process.uid.zero? ? "user root;" : ""
        type, body = NGINX_ANSWERS.fetch(File.basename(c.app, ".ru"))
        conf = write_config("nginx.conf.template", File.join(c.dir, "nginx.conf"),
                            user: user, workers: nginx_workers(c.workers), dir: c.dir, port: c.port,
                            connections: c.connections || NGINX_CONNECTIONS, type: type, body: body)
        %W[nginx -p #{c.dir} -e #{c.dir}/error.log -c #{conf}]
      end,
      # The static tables' reference: the same directory by sendfile, no open_file_cache.
      Peer.new(key: "nginx_static", group: "nginx", name: "nginx", runtime: :native,
               apps: %w[static_1k static_100k static_1m static_range static_304],
               gem: "nginx", note: "`sendfile on`, no `open_file_cache`",
               mode: ->(w) { "worker_processes #{nginx_workers(w)}" }) do |c|
        user = Process.uid.zero? ? "user root;" : ""
        conf = write_config("nginx_static.conf.template", File.join(c.dir, "nginx.conf"),
                            user: user, workers: nginx_workers(c.workers), dir: c.dir, port: c.port,
                            connections: c.connections || NGINX_CONNECTIONS, root: Apps::STATIC_DIR)
        %W[nginx -p #{c.dir} -e #{c.dir}/error.log -c #{conf}]
      end,
      # The limit for up_node: a bare Node http hello world (the same body, a content-length).
      Peer.new(key: "node_http", group: "node", name: "node http (limit)", runtime: :native, apps: %w[hello], gem: "node",
               note: "Node's http module answering from a callback, no Opal, no Rack",
               mode: ->(w) { w == 1 ? "1 process" : "#{workers(w)} (node:cluster)" }) do |c|
        %W[node #{File.join(CONFIG_DIR, "node_hello.js")} #{c.port} #{c.workers}]
      end,
      # The limit for up_node on the WebSocket tables: the npm ws package (bench/package.json) on
      # Node's http module, the two modules up_node runs on, without Opal or Rack.
      Peer.new(key: "node_ws", group: "node", name: "node ws (limit)", runtime: :native,
               apps: %w[ws_echo ws_broadcast ws_idle], gem: "npm:ws",
               note: "the npm ws package on Node's http module, no Opal, no Rack",
               mode: ->(_w) { "1 process" }) do |c|
        %W[node #{File.join(CONFIG_DIR, "ws_node.js")} #{c.port} #{File.basename(c.app, ".ru")}]
      end,
      # H2O runs its mruby handlers on each of its event-loop threads: a thread per worker.
      Peer.new(key: "h2o", name: "h2o + mruby", runtime: :native, apps: %w[json_const], gem: "h2o",
               note: "the same handler in its embedded mruby",
               mode: ->(w) { "#{w} thread#{w == 1 ? "" : "s"} (`num-threads: #{w}`)" }) do |c|
        user = Process.uid.zero? ? "user: root" : ""
        conf = write_config("h2o.conf.template", File.join(c.dir, "h2o.conf"),
                            user: user, workers: c.workers, dir: c.dir, port: c.port,
                            handler: File.join(CONFIG_DIR, "json_const_h2o.rb"))
        %W[h2o -c #{conf}]
      end
    ].freeze
  end
end
