# frozen_string_literal: true

require "optparse"
require_relative "config_file"
require_relative "hooks"
require_relative "options"
require_relative "start_error"
require_relative "version"

module Up
  # The command line of up_ruby and up_node (and, later, of up): turns ARGV, over the config
  # file (-C, or config/up.rb when there is one), over the environment (PORT, WEB_CONCURRENCY,
  # MAX_THREADS), into settings checked by Up::Options, and hands them to a launcher
  # (Up::Launcher unless told otherwise: up_node passes Up::Node::Launcher). Bad arguments, and
  # every reason a start fails that the user can fix (Up::StartError: a config.ru that does not
  # load, a port in use), end the process with a one-line message and status 1; --trace (or
  # UP_TRACE=1) prints the backtrace of what caused it after that line.
  class CLI
    DEFAULTS = Options::DEFAULTS

    class UsageError < StandardError; end

    # The config file's hooks (an Up::Hooks), once #parse has run.
    attr_reader :hooks

    # launcher: a class with .new(options, hooks:) and #run (the exit status); nil for
    # Up::Launcher, loaded only then since it needs the native extension.
    def initialize(argv, program: "up_ruby", out: $stdout, env: ENV, launcher: nil)
      @argv = argv.dup
      @launcher = launcher
      @program = program
      @out = out
      @env = env
      @hooks = Hooks.new
    end

    # The options, or nil when the command only printed something (-v, -h).
    def parse
      typed = {}
      parser = build_parser(typed)
      rest = parser.parse(@argv)
      return nil if @printed
      raise UsageError, "too many arguments: #{rest.join(" ")}" if rest.size > 1

      typed[:rackup] = rest.first if rest.first
      values, names = Options.from_environment(@env)
      if (file = config_file(typed[:config_file]))
        values[:config_file] = file.path # named in the start log
        values.merge!(file.values)
        names.merge!(file.names)
        @hooks = file.hooks
      end
      names.reject! { |key, _| typed.key?(key) } # what the command line set is named by its flag
      Options.new(values.merge(typed), names: names).to_h
    rescue OptionParser::ParseError, Options::Error, ConfigFile::Error => e
      raise UsageError, e.message
    end

    def run
      options = parse
      return 0 unless options

      @trace = options[:trace]
      launcher = @launcher || begin
        require_relative "launcher"
        Launcher
      end
      launcher.new(options, hooks: @hooks).run
    rescue UsageError => e
      warn "#{@program}: #{e.message}"
      warn "Try '#{@program} --help'."
      1
    rescue StartError => e
      warn "#{@program}: #{e.message}"
      warn (e.cause || e).full_message(highlight: false, order: :top) if @trace || @env["UP_TRACE"] == "1"
      1
    end

    private

    # Settings the launcher cannot honour (Up::Node::Launcher::UNSUPPORTED): --help leaves
    # them out; given anyway, the launcher refuses them in one line.
    def unsupported
      return [] unless @launcher&.const_defined?(:UNSUPPORTED)

      @launcher::UNSUPPORTED.keys
    end

    # The file -C names (it must exist), else config/up.rb if there is one, else none.
    def config_file(path)
      return ConfigFile.load(path) if path
      return ConfigFile.load(ConfigFile::DEFAULT_PATH) if File.file?(ConfigFile::DEFAULT_PATH)

      nil
    end

    # The help of a parser without the options of the settings the launcher refuses.
    def help(parser)
      flags = Options::SETTINGS.select { |s| unsupported.include?(s.key) }.map(&:flag)
      parser.top.list.reject! { |switch| switch.is_a?(OptionParser::Switch) && switch.long.intersect?(flags) }
      parser.help
    end

    def build_parser(options)
      OptionParser.new do |o|
        o.banner = "Usage: #{@program} [options] [config.ru]"
        o.separator ""
        o.separator "Serves a Rack app with UP! (config.ru defaults to ./config.ru)."
        o.separator ""
        o.on("-p", "--port PORT", Integer, "Port to listen on (#{DEFAULTS[:port]})") { |v| options[:port] = v }
        o.on("-b", "--bind ADDRESS", "Address to serve; again for more: a host (all its addresses,",
             "on --port), tcp://HOST:PORT, [::1], unix:///path.sock?mode=0660,",
             "ssl://HOST:PORT?cert=FILE&key=FILE (HTTPS there) (#{DEFAULTS[:bind].join})") do |v|
          (options[:bind] ||= []) << v
        end
        o.on("-w", "--workers N", Integer, "Worker processes (number of processors; 0 and 1 mean a single process)") { |v| options[:workers] = v }
        o.on("-t", "--threads N", String,
             "Requests run at once per worker (#{DEFAULTS[:threads]}); one thread runs them",
             "while none blocks, more wake when one does (0 means 1; MIN:MAX as Puma's takes MAX)") do |v|
          options[:threads] = v
        end
        o.on("-C", "--config FILE", "Config file (#{ConfigFile::DEFAULT_PATH} when there is one)") { |v| options[:config_file] = v }
        o.on("-e", "--environment NAME", "RACK_ENV for the app (RACK_ENV, else development)") { |v| options[:environment] = v }
        o.on("--preload", "Load the app once in the master, before forking workers (the default)") { options[:preload] = true }
        o.on("--no-preload", "Load the app in each worker (for phased restarts)") { options[:preload] = false }
        o.on("--early-hints", "Give apps rack.early_hints, with which they send 103 responses (the default)") do
          options[:early_hints] = true
        end
        o.on("--no-early-hints", "Leave rack.early_hints out of the env (Puma's default)") { options[:early_hints] = false }
        o.on("--http2", "Speak HTTP/2 beside HTTP/1.1: h2 by ALPN over TLS, h2c by prior knowledge (the default)") do
          options[:http2] = true
        end
        o.on("--no-http2", "Speak HTTP/1.1 only") { options[:http2] = false }
        o.on("--io-thread", "Run each worker's loop on a native thread of its own, not on the app threads",
             "(without either flag, each worker chooses by what its app calls do)") do
          options[:io_thread] = true
        end
        o.on("--no-io-thread", "App threads run the loop between their requests, always") { options[:io_thread] = false }
        o.on("--worker-timeout SECONDS", Float, "A worker silent this long is killed and replaced (#{DEFAULTS[:worker_timeout].to_i})") do |v|
          options[:worker_timeout] = v
        end
        o.on("-s", "--secure", "Serve HTTPS on every bind (needs -c and -k; in development,",
             "without them, a self-signed certificate for localhost is made)") { options[:secure] = true }
        o.on("-a", "--ca-file FILE", "Chain certificates sent after -c's (PEM)") { |v| options[:ca_file] = v }
        o.on("-c", "--cert-file FILE", "Certificate, then its chain (PEM)") { |v| options[:cert_file] = v }
        o.on("-k", "--key-file FILE", "Its private key (PEM)") { |v| options[:key_file] = v }
        o.on("--key-password-command CMD", "A command that prints the passphrase of encrypted keys") do |v|
          options[:key_password_command] = v
        end
        o.on("--acme-domain NAME", "Serve HTTPS with a certificate ordered by ACME for NAME; again for more") do |v|
          (options[:acme_domains] ||= []) << v
        end
        o.on("--acme-email ADDRESS", "The ACME account's contact") { |v| options[:acme_email] = v }
        o.on("--acme-directory URL", "The ACME server's directory (Let's Encrypt's)") { |v| options[:acme_directory] = v }
        o.on("--acme-staging", "Let's Encrypt's staging directory") { options[:acme_staging] = true }
        o.on("--acme-dir DIR", "Where the account key and the certificates are kept (mode 0600)") { |v| options[:acme_dir] = v }
        o.on("--acme-ca-file FILE", "CA certificates the ACME directory's HTTPS is checked with (the system's)") do |v|
          options[:acme_ca_file] = v
        end
        o.on("-l", "--log-file FILE", "Write the server log to FILE (stderr)") { |v| options[:log_file] = v }
        o.on("-P", "--pid-file FILE", "Write the process id to FILE") { |v| options[:pid_file] = v }
        o.on("-S", "--state-path FILE", "Write the pid, control URL and token to FILE (mode 0600), for upctl") do |v|
          options[:state_path] = v
        end
        o.on("--access-log FILE", "A line a request in FILE: common log format, then seconds taken") do |v|
          options[:access_log] = v
        end
        o.on("--control-url URL", "Control endpoint for upctl: tcp://127.0.0.1:PORT or unix:///path.sock") do |v|
          options[:control_url] = v
        end
        o.on("--control-token TOKEN", "Token the control endpoint asks for (if none, one is made, logged,",
             "written to the state file and kept across hot restarts)") do |v|
          options[:control_token] = v
        end
        o.on("--trace", "A start that fails prints the backtrace of what failed (UP_TRACE=1 too)") do
          options[:trace] = true
        end
        o.on("--metrics-url URL", "Prometheus /metrics, /live and /ready (no token): tcp://HOST:PORT or unix:///path.sock") do |v|
          options[:metrics_url] = v
        end
        o.on("--stop-delay SECONDS", Float, "On TERM, /ready says 503 at once and requests are served this long before the drain (0)") do |v|
          options[:stop_delay] = v
        end
        o.on("--worker-max-rss MB", Integer, "A worker whose resident memory passes this is replaced once its requests are done (0: never)") do |v|
          options[:worker_max_rss] = v
        end
        o.on("--refork-after N[,N...]", "Once a worker has served N requests, the next workers fork from it (cluster mode, Linux)") do |v|
          options[:refork_after] = v
        end
        o.separator ""
        o.separator "Limits and timeouts (sizes in bytes, times in seconds):"
        o.on("--max-head-size BYTES", Integer, "Request line + headers; larger gets 431 (#{DEFAULTS[:max_head_size]})") { |v| options[:max_head_size] = v }
        o.on("--max-headers N", Integer, "Header fields per request; more gets 431 (#{DEFAULTS[:max_headers]})") { |v| options[:max_headers] = v }
        o.on("--max-body-size BYTES", Integer, "Request body; larger gets 413, 0 for no limit (#{DEFAULTS[:max_body_size]})") { |v| options[:max_body_size] = v }
        o.on("--spool-threshold BYTES", Integer, "Bodies larger than this go to a temp file (#{DEFAULTS[:spool_threshold]})") { |v| options[:spool_threshold] = v }
        o.on("--head-timeout SECONDS", Float, "To receive the request head; then 408 (#{DEFAULTS[:head_timeout]})") { |v| options[:head_timeout] = v }
        o.on("--body-timeout SECONDS", Float, "Longest pause while a body arrives; then 408 (#{DEFAULTS[:body_timeout]})") { |v| options[:body_timeout] = v }
        o.on("--keepalive-timeout SECONDS", Float, "Idle keep-alive connection is closed after (#{DEFAULTS[:keepalive_timeout]})") { |v| options[:keepalive_timeout] = v }
        o.on("--write-timeout SECONDS", Float, "Longest wait for a client to read (#{DEFAULTS[:write_timeout]})") { |v| options[:write_timeout] = v }
        o.on("--max-pipeline N", Integer, "Pipelined responses held before writing (#{DEFAULTS[:max_pipeline]})") { |v| options[:max_pipeline] = v }
        o.on("--shutdown-timeout SECONDS", Float, "In-flight requests get this long on stop (#{DEFAULTS[:shutdown_timeout]})") { |v| options[:shutdown_timeout] = v }
        o.separator ""
        o.separator "WebSockets, event streams and pub/sub:"
        o.on("--max-msg BYTES", Integer, "Largest WebSocket message; larger closes with 1009 (#{DEFAULTS[:max_msg]})") { |v| options[:max_msg] = v }
        o.on("--ws-ping SECONDS", Float, "Ping a WebSocket idle this long, close it after as long again; 0: never (#{DEFAULTS[:ws_ping].to_i})") do |v|
          options[:ws_ping] = v
        end
        o.on("--sse-heartbeat SECONDS", Float, "A comment on an event stream silent this long; 0: never (#{DEFAULTS[:sse_heartbeat].to_i})") do |v|
          options[:sse_heartbeat] = v
        end
        o.on("--ws-max-pending BYTES", Integer, "A subscriber this far behind is closed with 1008 (#{DEFAULTS[:ws_max_pending]})") do |v|
          options[:ws_max_pending] = v
        end
        o.on("--ws-deflate", "Compress WebSocket messages for clients that offer permessage-deflate") do
          options[:ws_deflate] = true
        end
        o.on("--no-ws-deflate", "Send WebSocket messages as they are (the default: compressing costs CPU)") do
          options[:ws_deflate] = false
        end
        o.on("-r", "--redis-url URL", "Pub/sub across servers through this Redis: redis://[:PASSWORD@]HOST[:PORT] or unix:///PATH") do |v|
          options[:redis_url] = v
        end
        o.separator ""
        o.separator "Static files (answered by the engine before the app; a miss goes to the app):"
        o.on("--public DIR", "Serve DIR at / (default: ./public beside config.ru, or the Rails app's public/)") do |v|
          options[:public] = v
        end
        o.on("--no-public", "Serve no public directory") { options[:public] = false }
        o.on("--static /PREFIX=DIR[:DIR...]", "Serve the directories at /PREFIX, the first holding a file wins; again for more") do |v|
          (options[:static] ||= []) << v
        end
        o.on("--static-only [DIR]", "No app, no config.ru: serve DIR (., or the --static-config root) and nothing else") do |v|
          options[:static_only] = v || true
        end
        o.on("--static-config FILE", "A site config in the shape of static.json: root, clean_urls, error_page, headers,",
             "redirects, https_only") do |v|
          options[:static_config] = v
        end
        o.on("--static-dotfiles", "Serve files and directories whose name starts with a dot") { options[:static_dotfiles] = true }
        o.on("--dir-listing", "An HTML index of a directory without index.html") { options[:dir_listing] = true }
        o.on("--trusted-proxy ADDRESS", "A proxy (10.0.0.1, 10.0.0.0/8) whose X-Forwarded-Proto https_only believes; again for more") do |v|
          (options[:trusted_proxy] ||= []) << v
        end
        o.separator ""
        o.on("-v", "--version", "Print the version") do
          @out.puts "UP! #{Up::VERSION}"
          @printed = true
        end
        o.on("-h", "--help", "Print this help") do
          @out.puts help(build_parser({}))
          @printed = true
        end
      end
    end
  end
end
