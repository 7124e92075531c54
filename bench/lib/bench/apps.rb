# frozen_string_literal: true

module Bench
  # The apps bench/run can measure: where each one's rackup file is, which request wrk sends,
  # what a correct answer looks like (a server failing it is not measured), which rows serve it
  # and what it needs around it (a Redis, a Rails database, its own bundle). Read by
  # bench/run, Bench::Options and Bench::Runner; owns nothing.
  module Apps
    # name: the --apps name. path: the rackup file, from the repo root. request_path: what wrk
    # and the first check GET. expect: a lambda of the body. only: the keys or groups of the
    # rows that serve it (nil: every row that can). needs: :redis (a redis-server whose URL
    # the servers get in REDIS_URL) and/or :rails (the app's own bundle and a database).
    # default: measured when --apps is not given. up_args: flags the UP! rows get on this app,
    # and up_note says why in their notes. ws: the WebSocket apps' bench/ws_load mode ("echo",
    # "broadcast", "idle"; nil: wrk measures it over HTTP). paths: {peer key => rackup file}
    # for a server that runs the same behaviour from its own file (Falcon, with
    # async-websocket's API). workers: the only worker counts it is measured with (nil: all).
    # peer_args: {peer key => flags} a peer gets on this app (where its static directory is;
    # agoo's replace the rackup file, itsi's name the directory its static_assets serves).
    # request_path may be a lambda, for a path known only once the app's services ran (a
    # fingerprinted asset). headers: request fields wrk and the first check send (Range).
    # status: the status the first check wants (200 unless given). validator: :etag to send
    # every request with If-None-Match set to the etag of the server's own first answer (each
    # server makes its etags its own way). appless: the peers that serve this app's files
    # without running the app, so from bench/Gemfile rather than the app's own bundle.
    App = Struct.new(:name, :path, :request_path, :expect, :only, :needs, :default, :up_args, :up_note,
                     :ws, :paths, :workers, :peer_args, :headers, :status, :validator, :appless,
                     keyword_init: true) do
      def target
        request_path.respond_to?(:call) ? request_path.call : request_path
      end

      def expected_status
        status || 200
      end

      def request_headers
        headers || {}
      end

      def appless?(peer)
        appless.to_a.include?(peer.key)
      end

      def serves?(peer)
        only.nil? || only.include?(peer.key) || only.include?(peer.group)
      end

      def needs?(what)
        needs.include?(what)
      end

      def ws?
        !ws.nil?
      end

      # The file peer runs: its own when it has one, else the shared one.
      def path_for(peer)
        paths&.fetch(peer.key, nil) || path
      end

      def args_for(peer)
        peer_args&.fetch(peer.key, nil)
      end

      def measured_with?(workers_count)
        workers.nil? || workers.include?(workers_count)
      end
    end

    # The JSON apps answer {"foo":"bar"}: bench/run stores "bar" in Redis before json_api runs.
    JSON_DOCUMENT = '{"foo":"bar"}'

    # The Rack servers that run any Rack app, for the tables that compare Rack peers only.
    RACK_PEERS = %w[up agoo falcon iodine itsi puma].freeze

    # The WebSocket tables: UP! (default and one thread, as against iodine -t 1), up_node,
    # and the peers with WebSockets of their own; one worker, as their targets are set.
    WS_PEERS = %w[up_default up_thread up_node up_addon iodine falcon node_ws].freeze

    # The static tables: bench/static/public, written before the first table (needs:
    # :static_files), served by UP!'s engine (public/ beside bench/static/config.ru, no flag),
    # nginx (sendfile on, no open_file_cache), agoo (-d DIR and no app: Bench::Peers says why),
    # iodine (-www) and itsi (its static_assets middleware, bench/config/itsi_static.rb.template).
    # Text of a fixed pattern, so a wrong byte shows in the first check.
    STATIC_DIR = File.expand_path("../../static/public", __dir__)
    STATIC_FILES = { "1k.txt" => 1024, "100k.txt" => 100 * 1024, "1m.txt" => 1024 * 1024 }.freeze
    STATIC_PEERS = %w[up_default nginx_static agoo iodine itsi].freeze
    STATIC_ARGS = { "agoo" => ["-d", STATIC_DIR], "iodine" => ["-www", STATIC_DIR], "itsi" => [STATIC_DIR] }.freeze
    # static_range asks for the second KiB of the 1 MB file: a 206 of 1,024 bytes.
    STATIC_RANGE = 1024..2047

    # The Rails asset tables: examples/rails' stylesheet and script as `rails assets:precompile`
    # fingerprints them into public/assets (needs: :rails_assets), served by UP!'s engine (the
    # app's public/, no flag), by Rails' ActionDispatch::Static under Puma
    # (config.public_file_server.enabled), and by agoo from the directory with no app.
    RAILS_PUBLIC = File.expand_path("../../../examples/rails/public", __dir__)
    RAILS_ASSET_PEERS = %w[up_default puma agoo].freeze
    RAILS_ASSET_ARGS = { "agoo" => ["-d", RAILS_PUBLIC] }.freeze

    # The precompiled asset "application-HEX.EXT" (its path on disk), or nil before
    # assets:precompile.
    def self.rails_asset(ext)
      Dir.glob(File.join(RAILS_PUBLIC, "assets", "application-*.#{ext}")).min
    end

    def self.rails_asset_path(ext)
      file = rails_asset(ext) or return "/assets/application.#{ext}"
      "/assets/#{File.basename(file)}"
    end

    def self.rails_asset_body?(ext, body)
      (file = rails_asset(ext)) && body == File.binread(file)
    end

    def self.static_bytes(size)
      line = "#{("a".."z").to_a.join * 2}0123456789\n"
      (line * ((size / line.bytesize) + 1)).byteslice(0, size)
    end

    ALL = [
      App.new(name: "hello", path: "test/rackup/hello.ru", request_path: "/", needs: [], default: true,
              expect: ->(body) { body == "Hello World" }),
      # hello with a new connection per request: the cost of accepting, and of spreading the
      # connections over the workers.
      App.new(name: "hello_close", path: "test/rackup/hello.ru", request_path: "/", needs: [], default: false,
              only: %w[up], headers: { "connection" => "close" }, expect: ->(body) { body == "Hello World" }),
      App.new(name: "env_to_s", path: "test/rackup/env_to_s.ru", request_path: "/", needs: [], default: true,
              expect: ->(body) { body.start_with?("{") }),
      App.new(name: "body_100k", path: "test/rackup/body_100k.ru", request_path: "/", needs: [], default: true,
              expect: ->(body) { body.bytesize == 102_400 }),
      # examples/json_api: a Redis GET per request, through one connection per app thread.
      App.new(name: "json_api", path: "examples/json_api/config.ru", request_path: "/", needs: [:redis],
              only: RACK_PEERS, default: false, expect: ->(body) { body == JSON_DOCUMENT }),
      # The same handler with the value in memory, against H2O running the same handler in its
      # embedded mruby (bench/config/json_const_h2o.rb): the seed's stack.
      # nginx answering the same document from its config is the limit.
      App.new(name: "json_const", path: "test/rackup/json_const.ru", request_path: "/", needs: [],
              only: %w[up h2o nginx], default: false, expect: ->(body) { body == JSON_DOCUMENT }),
      # examples/rails' scaffold index (10 posts from its seeds), against Puma, Rails' default.
      # Rails sends its stylesheet ahead in a 103 when the server offers rack.early_hints, as
      # UP! does by default and Puma does not; wrk would count each 103 as a response of its
      # own (doubling UP!'s req/s), so UP! runs here without them, as Puma does.
      App.new(name: "rails", path: "examples/rails/config.ru", request_path: "/posts", needs: [:rails],
              only: %w[up puma], default: false, expect: ->(body) { body.include?("<h1>Posts</h1>") },
              up_args: %w[--no-early-hints],
              up_note: "`--no-early-hints`: no 103 before each page, as under Puma (wrk would count it as a response)"),
      # examples/sinatra's hello route on the Opal runtimes against the same app on Puma (the
      # target: up_node at least as fast) and on up_ruby, and examples/roda on them against up_ruby
      # (at least 0.5×).
      App.new(name: "sinatra", path: "examples/sinatra/config.ru", request_path: "/", needs: [],
              only: %w[up_default up_node up_addon puma], default: false,
              expect: ->(body) { body == "Hello from Sinatra\n" }),
      App.new(name: "roda", path: "examples/roda/config.ru", request_path: "/", needs: [],
              only: %w[up_default up_node up_addon], default: false, expect: ->(body) { body == "Hello from Roda\n" }),
      # WebSockets through the upgrade API, measured with bench/ws_load instead of
      # wrk. Falcon runs the same behaviour with async-websocket, Node with the npm ws package
      # (bench/config/ws_node.js). ws_idle holds 10,000 connections to the echo app.
      App.new(name: "ws_echo", path: "test/rackup/ws_echo.ru", request_path: "/", needs: [], default: false,
              only: WS_PEERS, ws: "echo", workers: [1], paths: { "falcon" => "bench/config/falcon_ws_echo.ru" }),
      App.new(name: "ws_broadcast", path: "test/rackup/ws_broadcast.ru", request_path: "/", needs: [],
              default: false, only: WS_PEERS, ws: "broadcast", workers: [1, 2],
              paths: { "falcon" => "bench/config/falcon_ws_broadcast.ru" }),
      App.new(name: "static_1k", path: "bench/static/config.ru", request_path: "/1k.txt",
              needs: [:static_files], only: STATIC_PEERS, default: false, peer_args: STATIC_ARGS,
              expect: ->(body) { body == static_bytes(STATIC_FILES.fetch("1k.txt")) }),
      App.new(name: "static_100k", path: "bench/static/config.ru", request_path: "/100k.txt",
              needs: [:static_files], only: STATIC_PEERS, default: false, peer_args: STATIC_ARGS,
              expect: ->(body) { body == static_bytes(STATIC_FILES.fetch("100k.txt")) }),
      App.new(name: "static_1m", path: "bench/static/config.ru", request_path: "/1m.txt",
              needs: [:static_files], only: STATIC_PEERS, default: false, peer_args: STATIC_ARGS,
              expect: ->(body) { body == static_bytes(STATIC_FILES.fetch("1m.txt")) }),
      App.new(name: "static_range", path: "bench/static/config.ru", request_path: "/1m.txt",
              needs: [:static_files], only: STATIC_PEERS, default: false, peer_args: STATIC_ARGS,
              headers: { "range" => "bytes=#{STATIC_RANGE.first}-#{STATIC_RANGE.last}" }, status: 206,
              expect: ->(body) { body == static_bytes(STATIC_FILES.fetch("1m.txt")).byteslice(STATIC_RANGE) }),
      App.new(name: "static_304", path: "bench/static/config.ru", request_path: "/1k.txt",
              needs: [:static_files], only: STATIC_PEERS, default: false, peer_args: STATIC_ARGS,
              validator: :etag, status: 304, expect: ->(body) { body.empty? }),
      App.new(name: "rails_css", path: "examples/rails/config.ru", request_path: -> { rails_asset_path("css") },
              needs: %i[rails rails_assets], only: RAILS_ASSET_PEERS, default: false,
              peer_args: RAILS_ASSET_ARGS, appless: %w[agoo], expect: ->(body) { rails_asset_body?("css", body) }),
      App.new(name: "rails_js", path: "examples/rails/config.ru", request_path: -> { rails_asset_path("js") },
              needs: %i[rails rails_assets], only: RAILS_ASSET_PEERS, default: false,
              peer_args: RAILS_ASSET_ARGS, appless: %w[agoo], expect: ->(body) { rails_asset_body?("js", body) }),
      App.new(name: "ws_idle", path: "test/rackup/ws_echo.ru", request_path: "/", needs: [], default: false,
              only: WS_PEERS, ws: "idle", workers: [1], paths: { "falcon" => "bench/config/falcon_ws_echo.ru" })
    ].freeze

    def self.ws_names
      ALL.select(&:ws?).map(&:name)
    end

    def self.names
      ALL.map(&:name)
    end

    def self.defaults
      ALL.select(&:default).map(&:name)
    end

    def self.fetch(name)
      ALL.find { |app| app.name == name } or raise KeyError, "unknown app #{name}"
    end
  end
end
