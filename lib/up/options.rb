# frozen_string_literal: true

require "etc"
require "ipaddr"
require_relative "bind"
require_relative "pub_sub/redis/address"

module Up
  # Every setting a user can give UP! (port, binds, threads, limits, timeouts, files): its type,
  # its default and the values it may take, and the one check that turns what the user typed
  # into settings. Up::CLI creates it from the environment, the config file and OptionParser's
  # values, in that order of strength, Up::RackHandler from rackup's (Strings); both hand #to_h
  # to Up::Launcher. It owns nothing but that frozen Hash.
  #
  # The ranges are those Up::Server.new accepts (ext/up/ruby/server_object.c, Server_initialize,
  # opt_u64, opt_ms), so a value that passes here is never refused by the C side. Where C would
  # silently cut a value down to a smaller field (max_pipeline is an unsigned int there, and it
  # converts every size with NUM2LL) the range stops at that field's limit instead.
  class Options
    # A value the user can fix. The message is one line that names the option as the user
    # spelled it: "--head-timeout must be between 0 and 86400 seconds".
    class Error < ArgumentError
      attr_reader :key

      def initialize(key, message)
        @key = key
        super(message)
      end
    end

    # Largest Integer the C side takes for a size or count (NUM2LL: a signed 64-bit integer).
    INT64_MAX = 2**63 - 1
    # Largest max_pipeline: C keeps it in an unsigned int.
    UINT_MAX = 2**32 - 1
    # Largest request head in bytes: the parser measures one in a C int, so a limit past
    # 2 GiB would wrap (Up::Server.new refuses more, UP_MAX_HEAD_SIZE_LIMIT in server.h).
    MAX_HEAD_SIZE = 1024 * 1024 * 1024
    # Most header fields a request may have: each request holds room for them all (32 bytes
    # each), so a huge value would make every request allocate megabytes (Up::Server.new).
    MAX_HEADERS = 10_000
    # Longest timeout in seconds, and the shortest is anything above 0 (opt_ms).
    MAX_TIMEOUT = 86_400

    # type: :integer (min..max, max nil for none), :threads (an integer, or "MIN:MAX" of which
    # the maximum counts), :seconds (0 < s <= MAX_TIMEOUT), :seconds_or_never (the same, or 0
    # for never), :string (nil allowed only where the default is nil), :binds (a list of
    # Up::Bind specs), :bind (one, with its port), :boolean, :auto_boolean (true, false, or nil and
    # :auto for "chosen while running"), :dir_or_false (a path, false for
    # none, nil for the default), :dir_or_true (a path, or true for "the one the site config
    # names"), :mounts (a list of "/PREFIX=DIR[:DIR...]"), :addresses (a list of IP addresses
    # or ADDRESS/BITS networks), :domains (a list of DNS names, lower-cased) or :tls_hosts (a list of { host:, cert_file:, key_file:,
    # ca_file: } Hashes, the config file's tls_host).
    # flag: how the CLI spells it.
    Setting = Struct.new(:key, :type, :default, :min, :max, :flag)

    SETTINGS = [
      #           key                 type      default            min  max         flag
      Setting.new(:port,              :integer, 3000,              0,   65_535,     "--port"),
      Setting.new(:bind,              :binds,   ["localhost"].freeze, nil, nil,     "--bind"),
      Setting.new(:workers,           :integer, Etc.nprocessors,   0,   nil,        "--workers"),
      Setting.new(:threads,           :threads, 5,                 0,   1024,       "--threads"),
      Setting.new(:rackup,            :string,  "config.ru",       nil, nil,        "config.ru"),
      Setting.new(:config_file,       :string,  nil,               nil, nil,        "--config"),
      Setting.new(:environment,       :string,  nil,               nil, nil,        "--environment"),
      Setting.new(:preload,           :boolean, true,              nil, nil,        "--preload"),
      Setting.new(:worker_timeout,    :seconds, 60,                nil, nil,        "--worker-timeout"),
      Setting.new(:log_file,          :string,  nil,               nil, nil,        "--log-file"),
      Setting.new(:pid_file,          :string,  nil,               nil, nil,        "--pid-file"),
      Setting.new(:state_path,        :string,  nil,               nil, nil,        "--state-path"),
      Setting.new(:access_log,        :string,  nil,               nil, nil,        "--access-log"),
      Setting.new(:early_hints,       :boolean, true,              nil, nil,        "--early-hints"),
      Setting.new(:http2,             :boolean, true,              nil, nil,        "--http2"),
      Setting.new(:io_thread,         :auto_boolean, nil,          nil, nil,        "--io-thread"),
      Setting.new(:control_url,       :bind,    nil,               nil, nil,        "--control-url"),
      Setting.new(:control_token,     :string,  nil,               nil, nil,        "--control-token"),
      Setting.new(:secure,            :boolean, false,             nil, nil,        "--secure"),
      Setting.new(:ca_file,           :string,  nil,               nil, nil,        "--ca-file"),
      Setting.new(:cert_file,         :string,  nil,               nil, nil,        "--cert-file"),
      Setting.new(:key_file,          :string,  nil,               nil, nil,        "--key-file"),
      Setting.new(:key_password_command, :string, nil,             nil, nil,        "--key-password-command"),
      Setting.new(:tls_hosts,         :tls_hosts, [].freeze,       nil, nil,        "tls_host"),
      Setting.new(:max_head_size,     :integer, 64 * 1024,         256, MAX_HEAD_SIZE, "--max-head-size"),
      Setting.new(:max_headers,       :integer, 100,               1,   MAX_HEADERS, "--max-headers"),
      Setting.new(:max_body_size,     :integer, 1024 * 1024 * 1024, 0,  INT64_MAX,  "--max-body-size"),
      Setting.new(:spool_threshold,   :integer, 1024 * 1024,       0,   INT64_MAX,  "--spool-threshold"),
      Setting.new(:head_timeout,      :seconds, 10,                nil, nil,        "--head-timeout"),
      Setting.new(:body_timeout,      :seconds, 30,                nil, nil,        "--body-timeout"),
      Setting.new(:keepalive_timeout, :seconds, 20,                nil, nil,        "--keepalive-timeout"),
      Setting.new(:write_timeout,     :seconds, 30,                nil, nil,        "--write-timeout"),
      Setting.new(:max_pipeline,      :integer, 32,                1,   UINT_MAX,   "--max-pipeline"),
      Setting.new(:shutdown_timeout,  :seconds, 30,                nil, nil,        "--shutdown-timeout"),
      Setting.new(:max_msg,           :integer, 16 * 1024 * 1024,  1,   INT64_MAX,  "--max-msg"),
      Setting.new(:ws_ping,           :seconds_or_never, 40,       nil, nil,        "--ws-ping"),
      Setting.new(:sse_heartbeat,     :seconds_or_never, 15,       nil, nil,        "--sse-heartbeat"),
      Setting.new(:ws_max_pending,    :integer, 4 * 1024 * 1024,   1,   INT64_MAX,  "--ws-max-pending"),
      Setting.new(:ws_deflate,        :boolean, false,             nil, nil,        "--ws-deflate"),
      Setting.new(:public,            :dir_or_false, nil,          nil, nil,        "--public"),
      Setting.new(:static,            :mounts,  [].freeze,         nil, nil,        "--static"),
      Setting.new(:static_only,       :dir_or_true, nil,           nil, nil,        "--static-only"),
      Setting.new(:static_config,     :string,  nil,               nil, nil,        "--static-config"),
      Setting.new(:static_dotfiles,   :boolean, false,             nil, nil,        "--static-dotfiles"),
      Setting.new(:dir_listing,       :boolean, false,             nil, nil,        "--dir-listing"),
      Setting.new(:trusted_proxy,     :addresses, [].freeze,       nil, nil,        "--trusted-proxy"),
      Setting.new(:redis_url,         :redis_url, nil,             nil, nil,        "--redis-url"),
      Setting.new(:metrics_url,       :bind,    nil,               nil, nil,        "--metrics-url"),
      Setting.new(:stop_delay,        :seconds_or_never, 0,        nil, nil,        "--stop-delay"),
      Setting.new(:worker_max_rss,    :integer, 0,                 0,   nil,        "--worker-max-rss"),
      Setting.new(:refork_after,      :counts,  [].freeze,         1,   nil,        "--refork-after"),
      Setting.new(:trace,             :boolean, false,             nil, nil,        "--trace"),
      Setting.new(:acme_domains,      :domains, [].freeze,         nil, nil,        "--acme-domain"),
      Setting.new(:acme_email,        :string,  nil,               nil, nil,        "--acme-email"),
      Setting.new(:acme_directory,    :string,  nil,               nil, nil,        "--acme-directory"),
      Setting.new(:acme_staging,      :boolean, false,             nil, nil,        "--acme-staging"),
      Setting.new(:acme_dir,          :string,  nil,               nil, nil,        "--acme-dir"),
      Setting.new(:acme_ca_file,      :string,  nil,               nil, nil,        "--acme-ca-file")
    ].freeze

    DEFAULTS = SETTINGS.to_h { |s| [s.key, s.default] }.freeze

    # values: settings by key, each an Integer, Float, true/false or a String to parse (as
    # rackup's -O NAME=VALUE gives them); a key that is missing or nil takes its default.
    # names: how the user spelled a key, for messages (the CLI flag unless given). Raises Error
    # for the first bad value, ArgumentError for a key that is no setting (a caller's bug).
    def initialize(values, names: {})
      unknown = values.keys - DEFAULTS.keys
      raise ArgumentError, "unknown settings: #{unknown.join(", ")}" unless unknown.empty?

      @names = names
      @settings = SETTINGS.to_h do |setting|
        value = values[setting.key]
        [setting.key, value.nil? ? coerce(setting, setting.default) : coerce(setting, value)]
      end.freeze
    end

    def to_h
      @settings
    end

    # Settings the environment gives, as the usual platforms set them: PORT, WEB_CONCURRENCY
    # (workers), MAX_THREADS (with MIN_THREADS: Puma's pair); and UP_TRACE=1 (--trace).
    # Returns [values, names] for Options.new, so that a bad one is named by its variable.
    def self.from_environment(env = ENV)
      values = {}
      names = {}
      values[:trace] = true if env["UP_TRACE"] == "1"
      { port: "PORT", workers: "WEB_CONCURRENCY", threads: "MAX_THREADS" }.each do |key, var|
        next if env[var].to_s.empty?

        values[key] = env[var]
        names[key] = var
      end
      if values[:threads] && !env["MIN_THREADS"].to_s.empty?
        values[:threads] = "#{env["MIN_THREADS"]}:#{values[:threads]}"
        names[:threads] = "MIN_THREADS:MAX_THREADS"
      end
      [values, names]
    end

    def [](key)
      @settings.fetch(key)
    end

    private

    def coerce(setting, value)
      case setting.type
      when :integer then integer(setting, value)
      when :threads then threads(setting, value)
      when :binds then binds(setting, value)
      when :bind then value.nil? ? nil : url(setting, value)
      when :seconds then seconds(setting, value)
      when :seconds_or_never then seconds_or_never(setting, value)
      when :string then string(setting, value)
      when :redis_url then value.nil? ? nil : redis_url(setting, value)
      when :boolean then boolean(setting, value)
      when :auto_boolean then [nil, :auto, "auto"].include?(value) ? nil : boolean(setting, value)
      when :dir_or_false then [false, "false"].include?(value) ? false : string(setting, value)
      when :dir_or_true then [true, "true"].include?(value) ? true : string(setting, value)
      when :mounts then mounts(setting, value)
      when :addresses then addresses(setting, value)
      when :tls_hosts then tls_hosts(setting, value)
      when :counts then counts(setting, value)
      when :domains then domains(setting, value)
      end
    end

    TLS_HOST_KEYS = %i[host cert_file key_file ca_file].freeze

    # Each a Hash with a host name ("example.com", "*.example.com"), cert_file and key_file
    # Strings, and an optional ca_file.
    def tls_hosts(setting, value)
      fail!(setting, "must be a list of host certificates") unless value.is_a?(Array)
      value.map do |host|
        fail!(setting, "must be { host:, cert_file:, key_file: }, not #{host.inspect}") unless host.is_a?(Hash)
        unknown = host.keys - TLS_HOST_KEYS
        fail!(setting, "#{host[:host].inspect}: unknown #{unknown.join(", ")}") unless unknown.empty?
        %i[host cert_file key_file].each do |key|
          fail!(setting, "#{host[:host].inspect} needs #{key}:") if host[key].nil?
          string(setting, host[key])
        end
        string(setting, host[:ca_file])
        host.dup.freeze
      end.freeze
    end

    # "1000" or "1000,10000" (a String, as the CLI and rackup's -O give it), an Integer or a
    # list of them; each within the setting's range, in increasing order.
    def counts(setting, value)
      list = value.is_a?(String) ? value.split(",") : Array(value)
      list = list.map { |n| integer(setting, n.is_a?(String) ? n.strip : n) }
      fail!(setting, "must be in increasing order, not #{list.join(",")}") unless list.each_cons(2).all? { |a, b| a < b }
      list.freeze
    end

    # DNS names a CA can validate by HTTP-01 or TLS-ALPN-01: letters, digits and hyphens in
    # dot-separated labels of 1 to 63 bytes, 253 at most; no wildcard (those need DNS-01).
    def domains(setting, value)
      list = value.is_a?(String) ? [value] : value
      fail!(setting, "must be a list of domain names, not #{value.inspect}") unless list.is_a?(Array)
      list.map do |name|
        string(setting, name)
        down = name.downcase.delete_suffix(".")
        label = /\A(?!-)[a-z0-9-]{1,63}(?<!-)\z/
        unless down.length <= 253 && down.include?(".") && down.split(".", -1).all? { |l| label.match?(l) }
          fail!(setting, "#{name.inspect} is not a domain name (a wildcard needs DNS-01, which UP! does not do)")
        end
        down
      end.uniq.freeze
    end

    def integer(setting, value)
      n = case value
          when Integer then value
          when String then Integer(value, 10, exception: false)
          end
      fail!(setting, "must be an integer, not #{value.inspect}") unless n
      fail!(setting, range_problem(setting, n)) if n < setting.min || (setting.max && n > setting.max)
      n
    end

    # Puma's "MIN:MAX": the maximum is how many requests run at once; UP! starts threads as
    # requests need them (the watchdog), so the minimum only has to make sense.
    def threads(setting, value)
      return integer(setting, value) unless value.is_a?(String) && value.include?(":")

      min, max = value.split(":", 2).map { |part| integer(setting, part) }
      fail!(setting, "minimum #{min} is above the maximum #{max}") if min > max
      max
    end

    # Every spec must parse (Up::Bind); the Strings are kept, the launcher parses them again
    # with the final port.
    def binds(setting, value)
      list = value.is_a?(String) ? [value] : value
      fail!(setting, "must be a list of addresses, not #{value.inspect}") unless list.is_a?(Array) && !list.empty?
      list.each do |spec|
        string(setting, spec)
        Bind.parse(spec, 0)
      rescue Bind::Error => e
        fail!(setting, e.message)
      end
      list.dup.freeze
    end

    # One address with its port: tcp://HOST:PORT or unix://PATH (the control endpoint's).
    def url(setting, value)
      string(setting, value)
      unless %r{\A(unix://.|tcp://.*:\d+\z)}.match?(value)
        fail!(setting, "must be tcp://HOST:PORT or unix://PATH, not #{value.inspect}")
      end
      Bind.parse(value, nil)
      value
    rescue Bind::Error => e
      fail!(setting, e.message)
    end

    # "/assets=public/assets:vendor/assets": a URL prefix of whole segments, then directories
    # in the order they are looked in. Kept as given; Up::StaticFiles resolves the paths.
    def mounts(setting, value)
      list = value.is_a?(String) ? [value] : value
      fail!(setting, "must be a list of /PREFIX=DIR[:DIR...], not #{value.inspect}") unless list.is_a?(Array)
      list.each do |spec|
        string(setting, spec)
        prefix, dirs = spec.split("=", 2)
        unless prefix.start_with?("/") && dirs && !dirs.split(":").reject(&:empty?).empty?
          fail!(setting, "#{spec.inspect} is not /PREFIX=DIR[:DIR...]")
        end
        if prefix != "/" && (prefix.end_with?("/") || prefix.split("/").drop(1).any? { |seg| ["", ".", ".."].include?(seg) })
          fail!(setting, "#{spec.inspect}: the prefix must be / or like /assets (no empty, . or .. segment, no trailing /)")
        end
      end
      list.dup.freeze
    end

    # Proxies whose X-Forwarded-Proto is believed: 10.0.0.1, 10.0.0.0/8, ::1.
    def addresses(setting, value)
      list = value.is_a?(String) ? [value] : value
      fail!(setting, "must be a list of addresses, not #{value.inspect}") unless list.is_a?(Array)
      list.each do |spec|
        string(setting, spec)
        IPAddr.new(spec)
      rescue IPAddr::Error
        fail!(setting, "#{spec.inspect} is not an IP address or ADDRESS/BITS")
      end
      list.dup.freeze
    end

    # Parsed now, so that a mistyped URL stops the boot instead of retrying forever.
    def redis_url(setting, value)
      string(setting, value)
      begin
        PubSub::Redis::Address.parse(value)
      rescue ArgumentError => e
        fail!(setting, e.message)
      end
      value
    end

    # "must be between 1 and 1024"; for a range with no practical top, the side it broke.
    def range_problem(setting, n)
      if setting.max && setting.max < INT64_MAX
        "must be between #{setting.min} and #{setting.max}"
      elsif n < setting.min
        setting.min.zero? ? "must not be negative" : "must be at least #{setting.min}"
      else
        "must be at most #{setting.max}"
      end
    end

    # Float seconds. NaN fails the range test, and Float() refuses "NaN" and "Infinity".
    def seconds(setting, value)
      s = case value
          when Integer, Float then value.to_f
          when String then Float(value, exception: false)
          end
      fail!(setting, "must be a number of seconds, not #{value.inspect}") unless s
      fail!(setting, "must be between 0 and #{MAX_TIMEOUT} seconds") unless s.positive? && s <= MAX_TIMEOUT
      s
    end

    def seconds_or_never(setting, value)
      return 0.0 if [0, 0.0, "0"].include?(value)

      seconds(setting, value)
    rescue Error
      fail!(setting, "must be between 0 (never) and #{MAX_TIMEOUT} seconds")
    end

    def string(setting, value)
      return nil if value.nil?

      fail!(setting, "must be a string, not #{value.inspect}") unless value.is_a?(String)
      fail!(setting, "must not be empty") if value.empty?
      fail!(setting, "must not contain a NUL byte") if value.include?("\0")
      value
    end

    # Strings for rackup: -O secure=false; a bare -O secure is already true.
    def boolean(setting, value)
      { true => true, false => false, "true" => true, "false" => false }.fetch(value) do
        fail!(setting, "must be true or false, not #{value.inspect}")
      end
    end

    def fail!(setting, problem)
      raise Error.new(setting.key, "#{@names.fetch(setting.key, setting.flag)} #{problem}")
    end
  end
end
