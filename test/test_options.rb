# frozen_string_literal: true

# Up::Options, the one check of every setting: each line of the tables is one input, accepted
# (with what it becomes) or rejected (with the one-line message). Values come as OptionParser
# gives them (Integer, Float) or as rackup's -O NAME=VALUE does (String).
require_relative "helper"
require "up/options"
require "up/launcher"

class TestOptions < Minitest::Test
  MAX = Up::Options::INT64_MAX

  ACCEPTED = [
    # what                                        key                 input             becomes
    ["port 0, for a port the kernel picks",       :port,              0,                0],
    ["the highest port",                          :port,              65_535,           65_535],
    ["a port as a string",                        :port,              "8080",           8080],
    ["a port string with surrounding spaces",     :port,              " 8080 ",         8080],
    ["a decimal string with a leading zero",      :port,              "010",            10],
    ["threads 0, the same as one",                :threads,           0,                0],
    ["1024 threads",                              :threads,           1024,             1024],
    ["workers 0, one process",                    :workers,           0,                0],
    ["many workers",                              :workers,           "64",             64],
    ["the smallest head size C takes",            :max_head_size,     256,              256],
    ["the largest head size C takes",             :max_head_size,     2**30,            2**30],
    ["one header field",                          :max_headers,       "1",              1],
    ["the most header fields C takes",            :max_headers,       10_000,           10_000],
    ["a body size of 0, no limit",                :max_body_size,     0,                0],
    ["the largest body size C takes",             :max_body_size,     MAX.to_s,         MAX],
    ["a spool threshold of 0, always a file",     :spool_threshold,   "0",              0],
    ["a pipeline of one",                         :max_pipeline,      1,                1],
    ["the largest pipeline an unsigned int holds", :max_pipeline,     4_294_967_295,    4_294_967_295],
    ["a timeout as an Integer",                   :head_timeout,      10,               10.0],
    ["half a second as a string",                 :head_timeout,      "0.5",            0.5],
    ["a whole number of seconds as a string",     :body_timeout,      "30",             30.0],
    ["a timeout in exponent notation",            :write_timeout,     "1e2",            100.0],
    ["a day, the longest timeout",                :keepalive_timeout, 86_400,           86_400.0],
    ["a day as a string",                         :shutdown_timeout,  "86400",          86_400.0],
    ["a tiny timeout above 0",                    :shutdown_timeout,  0.001,            0.001],
    ["a 1 MiB message limit",                     :max_msg,           "1048576",        1_048_576],
    ["pings every 5 s",                           :ws_ping,           "5",              5.0],
    ["no pings",                                  :ws_ping,           0,                0.0],
    ["no heartbeat",                              :sse_heartbeat,     "0",              0.0],
    ["a heartbeat every 2.5 s",                   :sse_heartbeat,     2.5,              2.5],
    ["a 64 KiB subscriber bound",                 :ws_max_pending,    65_536,           65_536],
    ["compression on",                            :ws_deflate,        "true",           true],
    ["a host name",                               :bind,              "127.0.0.1",      ["127.0.0.1"]],
    ["several binds of every kind",               :bind,              ["localhost", "[::1]", "tcp://0.0.0.0:8080", "unix:///run/up.sock?mode=0660"],
                                                                                         ["localhost", "[::1]", "tcp://0.0.0.0:8080", "unix:///run/up.sock?mode=0660"]],
    ["threads as Puma's MIN:MAX",                 :threads,           "1:8",            8],
    ["an environment",                            :environment,       "production",     "production"],
    ["a config file",                             :config_file,       "config/up.rb",   "config/up.rb"],
    ["no preload",                                :preload,           "false",          false],
    ["a worker timeout",                          :worker_timeout,    "30",             30.0],
    ["a log file",                                :log_file,          "up.log",         "up.log"],
    ["a pid file",                                :pid_file,          "/tmp/up.pid",    "/tmp/up.pid"],
    ["a state file",                              :state_path,        "tmp/up.state",   "tmp/up.state"],
    ["trace from rackup's bare -O trace",         :trace,             true,             true],
    ["trace said as a string",                    :trace,             "false",          false],
    ["an access log",                             :access_log,        "access.log",     "access.log"],
    ["a config.ru elsewhere",                      :rackup,            "app/config.ru",  "app/config.ru"],
    ["plain HTTP, said as false",                 :secure,            false,            false],
    ["plain HTTP, said as the string false",      :secure,            "false",          false],
    ["HTTPS",                                     :secure,            true,             true],
    ["HTTPS as the string true",                  :secure,            "true",           true],
    ["an ssl:// bind with its files",             :bind,              ["ssl://0.0.0.0:443?cert=/c.pem&key=/k.pem&ca=/ca.pem"],
                                                                                         ["ssl://0.0.0.0:443?cert=/c.pem&key=/k.pem&ca=/ca.pem"]],
    ["an ssl:// bind on -c and -k",               :bind,              "ssl://[::1]:8443", ["ssl://[::1]:8443"]],
    ["a key password command",                    :key_password_command, "pass show up", "pass show up"],
    ["certificates by host name",                 :tls_hosts,         [{ host: "a.test", cert_file: "a.crt", key_file: "a.key" }],
                                                                                         [{ host: "a.test", cert_file: "a.crt", key_file: "a.key" }]],
    ["nil, for the default",                      :threads,           nil,              5],
    ["no preload, each worker loads the app",     :preload,           false,            false],
    ["preload as the string true",                :preload,           "true",           true],
    ["early hints off, as Puma's default",        :early_hints,       false,            false],
    ["HTTP/1.1 only",                             :http2,             false,            false],
    ["HTTP/2 said by rackup",                     :http2,             "true",           true],
    ["the loop on a thread of its own",           :io_thread,         true,             true],
    ["the loop on the app threads, always",       :io_thread,         false,            false],
    ["the loop placed by measurement, said by rackup", :io_thread,    "auto",           nil],
    ["the loop placed by measurement, by default", :io_thread,        nil,              nil],
    ["a worker timeout of a second",              :worker_timeout,    "1",              1.0],
    ["a control token",                           :control_token,     "s3cret",         "s3cret"],
    ["a control URL on a tcp port",               :control_url,       "tcp://127.0.0.1:9293", "tcp://127.0.0.1:9293"],
    ["a control URL on a unix socket",            :control_url,       "unix:///tmp/up-ctl.sock", "unix:///tmp/up-ctl.sock"],
    ["a public directory",                        :public,            "public",         "public"],
    ["no public directory",                       :public,            false,            false],
    ["no public directory, said by rackup",       :public,            "false",          false],
    ["a static group of two directories",         :static,            "/assets=a:b",    ["/assets=a:b"]],
    ["static groups",                             :static,            ["/=pub", "/a/b=x"], ["/=pub", "/a/b=x"]],
    ["a static-only directory",                   :static_only,       "site",           "site"],
    ["static-only from the site config's root",   :static_only,       true,             true],
    ["a site config",                             :static_config,     "static.json",    "static.json"],
    ["dotfiles served",                           :static_dotfiles,   "true",           true],
    ["directory listings",                        :dir_listing,       true,             true],
    ["a trusted proxy network",                   :trusted_proxy,     "10.0.0.0/8",     ["10.0.0.0/8"]],
    ["trusted proxies of both families",          :trusted_proxy,     ["127.0.0.1", "::1"], ["127.0.0.1", "::1"]],
    ["a Redis URL with a password",               :redis_url,         "redis://:s3cret@10.0.0.2:6380/0", "redis://:s3cret@10.0.0.2:6380/0"],
    ["a Redis socket",                            :redis_url,         "unix:///run/redis.sock", "unix:///run/redis.sock"],
    ["a metrics URL on a tcp port",               :metrics_url,       "tcp://0.0.0.0:9394", "tcp://0.0.0.0:9394"],
    ["a metrics URL on a unix socket",            :metrics_url,       "unix:///run/up-metrics.sock", "unix:///run/up-metrics.sock"],
    ["a stop delay from rackup",                  :stop_delay,        "5",              5.0],
    ["no stop delay",                             :stop_delay,        0,                0.0],
    ["a worker memory limit in MB",               :worker_max_rss,    "512",            512],
    ["no worker memory limit",                    :worker_max_rss,    0,                0],
    ["one refork threshold",                      :refork_after,      "1000",           [1000]],
    ["refork thresholds from the command line",   :refork_after,      "100, 1000",      [100, 1000]],
    ["refork thresholds from the config file",    :refork_after,      [100, 1000],      [100, 1000]],
    ["ACME names, lower-cased, once each",        :acme_domains,      %w[Example.COM www.example.com example.com.], %w[example.com www.example.com]],
    ["one ACME name from rackup",                 :acme_domains,      "a-b.example.org", ["a-b.example.org"]],
    ["an ACME contact",                           :acme_email,        "ops@example.com", "ops@example.com"],
    ["an ACME directory",                         :acme_directory,    "https://ca.example/dir", "https://ca.example/dir"],
    ["Let's Encrypt's staging",                   :acme_staging,      "true",           true],
    ["the ACME files' directory",                 :acme_dir,          "/var/lib/up/acme", "/var/lib/up/acme"],
    ["a CA file for the ACME directory",          :acme_ca_file,      "/etc/ssl/ca.pem", "/etc/ssl/ca.pem"]
  ].freeze

  REJECTED = [
    # what                                        key                 input             message
    ["a port that is not a number",               :port,              "abc",            '--port must be an integer, not "abc"'],
    ["an empty port",                             :port,              "",               '--port must be an integer, not ""'],
    ["a port with a fraction",                    :port,              "80.5",           '--port must be an integer, not "80.5"'],
    ["a hex port",                                :port,              "0x50",           '--port must be an integer, not "0x50"'],
    ["a Float port",                              :port,              80.0,             "--port must be an integer, not 80.0"],
    ["a negative port",                           :port,              -1,               "--port must be between 0 and 65535"],
    ["a port above 65535",                        :port,              "65536",          "--port must be between 0 and 65535"],
    ["negative threads",                          :threads,           -3,               "--threads must be between 0 and 1024"],
    ["more than 1024 threads",                    :threads,           "1025",           "--threads must be between 0 and 1024"],
    ["a bare -O threads (true)",                  :threads,           true,             "--threads must be an integer, not true"],
    ["negative workers",                          :workers,           "-1",             "--workers must not be negative"],
    ["a head size below 256",                     :max_head_size,     100,              "--max-head-size must be between 256 and 1073741824"],
    ["a head size of 0",                          :max_head_size,     "0",              "--max-head-size must be between 256 and 1073741824"],
    ["a head size past what the parser's int holds", :max_head_size,  2**31,            "--max-head-size must be between 256 and 1073741824"],
    ["a head size C cannot convert",              :max_head_size,     MAX + 1,          "--max-head-size must be between 256 and 1073741824"],
    ["zero header fields",                        :max_headers,       0,                "--max-headers must be between 1 and 10000"],
    ["more header fields than C takes",           :max_headers,       10_001,           "--max-headers must be between 1 and 10000"],
    ["a negative body size",                      :max_body_size,     "-1",             "--max-body-size must not be negative"],
    ["a body size C cannot convert",              :max_body_size,     (MAX + 1).to_s,   "--max-body-size must be at most #{MAX}"],
    ["a negative spool threshold",                :spool_threshold,   -1,               "--spool-threshold must not be negative"],
    ["a pipeline of zero",                        :max_pipeline,      0,                "--max-pipeline must be between 1 and 4294967295"],
    ["a pipeline an unsigned int cannot hold",    :max_pipeline,      4_294_967_296,    "--max-pipeline must be between 1 and 4294967295"],
    ["a timeout of 0",                            :head_timeout,      0,                "--head-timeout must be between 0 and 86400 seconds"],
    ["a timeout of 0 as a string",                :head_timeout,      "0",              "--head-timeout must be between 0 and 86400 seconds"],
    ["a negative timeout",                        :body_timeout,      -0.5,             "--body-timeout must be between 0 and 86400 seconds"],
    ["a timeout over a day",                      :head_timeout,      "100000",         "--head-timeout must be between 0 and 86400 seconds"],
    ["a timeout just over a day",                 :keepalive_timeout, 86_400.001,       "--keepalive-timeout must be between 0 and 86400 seconds"],
    ["a timeout that overflows to Infinity",      :write_timeout,     "1e400",          "--write-timeout must be between 0 and 86400 seconds"],
    ["a NaN timeout",                             :shutdown_timeout,  Float::NAN,       "--shutdown-timeout must be between 0 and 86400 seconds"],
    ["the string NaN",                            :shutdown_timeout,  "NaN",            '--shutdown-timeout must be a number of seconds, not "NaN"'],
    ["a message limit of 0",                      :max_msg,           0,                "--max-msg must be at least 1"],
    ["a negative ping interval",                  :ws_ping,           -1,               "--ws-ping must be between 0 (never) and 86400 seconds"],
    ["a heartbeat over a day",                    :sse_heartbeat,     86_401,           "--sse-heartbeat must be between 0 (never) and 86400 seconds"],
    ["a subscriber bound of 0",                   :ws_max_pending,    "0",              "--ws-max-pending must be at least 1"],
    ["compression maybe",                         :ws_deflate,        "maybe",          '--ws-deflate must be true or false, not "maybe"'],
    ["a timeout that is not a number",            :head_timeout,      "abc",            '--head-timeout must be a number of seconds, not "abc"'],
    ["a timeout with a unit",                     :head_timeout,      "10s",            '--head-timeout must be a number of seconds, not "10s"'],
    ["an empty host",                             :bind,              "",               "--bind must not be empty"],
    ["a host that is not a string",               :bind,              127,              "--bind must be a list of addresses, not 127"],
    ["an empty list of binds",                    :bind,              [],               "--bind must be a list of addresses, not []"],
    ["a bind with another scheme",                :bind,              "http://x",       '--bind "http://x": only tcp://, ssl:// and unix:// binds are supported'],
    ["an ssl:// bind with an unknown parameter",  :bind,              "ssl://h:1?verify=1", '--bind "ssl://h:1?verify=1": unknown parameter "verify" (cert, key, ca, key_password_command)'],
    ["an ssl:// bind with an empty cert",         :bind,              "ssl://h:1?cert=", '--bind "ssl://h:1?cert=": cert= needs a value'],
    ["a host certificate without its key",        :tls_hosts,         [{ host: "a.test", cert_file: "a.crt" }], 'tls_host "a.test" needs key_file:'],
    ["a host certificate with a stray key",       :tls_hosts,         [{ host: "a.test", cert_file: "a", key_file: "b", pem: 1 }], 'tls_host "a.test": unknown pem'],
    ["host certificates not in a list",           :tls_hosts,         "a.test",         "tls_host must be a list of host certificates"],
    ["a host with a port outside a URL",          :bind,              "localhost:80",   '--bind "localhost:80": a port goes in a URL: tcp://localhost:80'],
    ["a tcp URL with a bad port",                 :bind,              "tcp://h:99999",  '--bind "tcp://h:99999": the port must be between 0 and 65535'],
    ["a unix socket with a bad mode",             :bind,              "unix:///s?mode=9", '--bind "unix:///s?mode=9": mode must be octal, like 0660'],
    ["threads with the minimum above the maximum", :threads,          "8:2",            "--threads minimum 8 is above the maximum 2"],
    ["an empty log file name",                    :log_file,          "",               "--log-file must not be empty"],
    ["an empty config.ru path",                   :rackup,            "",               "config.ru must not be empty"],
    ["an empty config file path",                 :config_file,       "",               "--config must not be empty"],
    ["an empty environment",                      :environment,       "",               "--environment must not be empty"],
    ["preload said as a number",                  :preload,           1,                "--preload must be true or false, not 1"],
    ["a worker timeout of 0",                     :worker_timeout,    0,                "--worker-timeout must be between 0 and 86400 seconds"],
    ["a file name with a NUL byte",               :pid_file,          "up\0.pid",       "--pid-file must not contain a NUL byte"],
    ["an empty state file path",                  :state_path,        "",               "--state-path must not be empty"],
    ["trace said as a number",                    :trace,             1,                "--trace must be true or false, not 1"],
    ["an empty access log path",                  :access_log,        "",               "--access-log must not be empty"],
    ["a boolean that is neither true nor false",  :secure,            "yes please",     '--secure must be true or false, not "yes please"'],
    ["preload said as yes",                       :preload,           "yes",            '--preload must be true or false, not "yes"'],
    ["early hints said as a number",              :early_hints,       0,                "--early-hints must be true or false, not 0"],
    ["HTTP/2 said as a word",                     :http2,             "h2",             '--http2 must be true or false, not "h2"'],
    ["io thread said as a word",                  :io_thread,         "yes",            "--io-thread must be true or false, not \"yes\""],
    ["a control URL without a port",              :control_url,       "tcp://127.0.0.1", '--control-url must be tcp://HOST:PORT or unix://PATH, not "tcp://127.0.0.1"'],
    ["an empty control token",                    :control_token,     "",               "--control-token must not be empty"],
    ["an empty public directory",                 :public,            "",               "--public must not be empty"],
    ["a static group without a directory",        :static,            "/assets=",       '--static "/assets=" is not /PREFIX=DIR[:DIR...]'],
    ["a static group without a prefix",           :static,            "public",         '--static "public" is not /PREFIX=DIR[:DIR...]'],
    ["a static prefix with a trailing slash",     :static,            "/assets/=a",     '--static "/assets/=a": the prefix must be / or like /assets (no empty, . or .. segment, no trailing /)'],
    ["a static prefix with dot dot",              :static,            "/a/..=a",        '--static "/a/..=a": the prefix must be / or like /assets (no empty, . or .. segment, no trailing /)'],
    ["static groups that are no list",            :static,            5,                "--static must be a list of /PREFIX=DIR[:DIR...], not 5"],
    ["an empty static-only directory",            :static_only,       "",               "--static-only must not be empty"],
    ["an empty site config path",                 :static_config,     "",               "--static-config must not be empty"],
    ["dotfiles said as yes",                      :static_dotfiles,   "yes",            '--static-dotfiles must be true or false, not "yes"'],
    ["listings said as 1",                        :dir_listing,       1,                "--dir-listing must be true or false, not 1"],
    ["a proxy that is no address",                :trusted_proxy,     "proxy.local",    '--trusted-proxy "proxy.local" is not an IP address or ADDRESS/BITS'],
    ["a proxy network too wide",                  :trusted_proxy,     "10.0.0.0/33",    '--trusted-proxy "10.0.0.0/33" is not an IP address or ADDRESS/BITS'],
    ["a Redis URL over TLS",                      :redis_url,         "rediss://h:6379", '--redis-url Redis URL "rediss://h:6379": TLS (rediss://) is not supported'],
    ["a Redis URL without a host",                :redis_url,         "redis://",       '--redis-url Redis URL "redis://": no host'],
    ["an empty key password command",             :key_password_command, "",            "--key-password-command must not be empty"],
    ["a metrics URL without a scheme",            :metrics_url,       "127.0.0.1:9394", '--metrics-url must be tcp://HOST:PORT or unix://PATH, not "127.0.0.1:9394"'],
    ["a negative stop delay",                     :stop_delay,        "-1",             "--stop-delay must be between 0 (never) and 86400 seconds"],
    ["a worker memory limit that is no number",   :worker_max_rss,    "1G",             '--worker-max-rss must be an integer, not "1G"'],
    ["refork thresholds out of order",            :refork_after,      "1000,100",       "--refork-after must be in increasing order, not 1000,100"],
    ["a refork threshold of zero",                :refork_after,      0,                "--refork-after must be at least 1"],
    ["a wildcard ACME name",                      :acme_domains,      ["*.example.com"], '--acme-domain "*.example.com" is not a domain name (a wildcard needs DNS-01, which UP! does not do)'],
    ["an ACME name of one label",                 :acme_domains,      ["localhost"],    '--acme-domain "localhost" is not a domain name (a wildcard needs DNS-01, which UP! does not do)'],
    ["an ACME label ending in a hyphen",          :acme_domains,      ["a-.example.com"], '--acme-domain "a-.example.com" is not a domain name (a wildcard needs DNS-01, which UP! does not do)'],
    ["an ACME name with an empty label",          :acme_domains,      ["a..example.com"], '--acme-domain "a..example.com" is not a domain name (a wildcard needs DNS-01, which UP! does not do)'],
    ["an empty ACME files' directory",            :acme_dir,          "",               "--acme-dir must not be empty"],
    ["an empty ACME contact",                     :acme_email,        "",               "--acme-email must not be empty"],
    ["an empty ACME directory URL",               :acme_directory,    "",               "--acme-directory must not be empty"],
    ["ACME staging neither true nor false",       :acme_staging,      "maybe",          '--acme-staging must be true or false, not "maybe"'],
    ["an empty CA file for the ACME directory",   :acme_ca_file,      "",               "--acme-ca-file must not be empty"]
  ].freeze

  def self.test_name(prefix, what)
    "test_#{prefix}_#{what.downcase.gsub(/[^a-z0-9]+/, "_").delete_suffix("_")}"
  end

  ACCEPTED.each do |what, key, input, expected|
    define_method(test_name("accepts", what)) do
      value = Up::Options.new({ key => input })[key]
      expected.nil? ? assert_nil(value) : assert_equal(expected, value)
    end
  end

  REJECTED.each do |what, key, input, message|
    define_method(test_name("rejects", what)) do
      error = assert_raises(Up::Options::Error) { Up::Options.new({ key => input }) }
      assert_equal message, error.message
      assert_equal key, error.key
    end
  end

  def test_every_setting_is_in_the_tables_both_ways
    rejected = REJECTED.map { |row| row[1] }
    accepted = ACCEPTED.map { |row| row[1] }
    Up::Options::DEFAULTS.each_key do |key|
      next if %i[ca_file cert_file key_file].include?(key) # paths: Up::TLSSetup loads them at the start

      assert_includes accepted, key, "no accepted value for #{key}"
      assert_includes rejected, key, "no rejected value for #{key}"
    end
  end

  def test_defaults_pass_their_own_check
    settings = Up::Options.new({}).to_h
    assert_equal Up::Options::DEFAULTS.keys, settings.keys
    assert settings.frozen?
  end

  def test_a_message_names_the_option_as_the_caller_spelled_it
    error = assert_raises(Up::Options::Error) do
      Up::Options.new({ head_timeout: "100000" }, names: { head_timeout: "-O head_timeout" })
    end
    assert_equal "-O head_timeout must be between 0 and 86400 seconds", error.message
  end

  def test_the_first_bad_value_is_the_one_reported
    error = assert_raises(Up::Options::Error) { Up::Options.new({ threads: -1, max_headers: 0 }) }
    assert_equal :threads, error.key
  end

  def test_an_unknown_key_is_a_callers_bug_not_a_usage_error
    error = assert_raises(ArgumentError) { Up::Options.new({ head_timout: 1 }) }
    refute_kind_of Up::Options::Error, error
  end

  # What the Ruby side lets through must never reach Server.new and be refused there: build a
  # server with every setting at each end of its range. (Values outside are not sent to C
  # here; the CLI and rackup tests show they never get that far.)
  def test_server_new_accepts_every_setting_at_both_ends_of_its_range
    server_keys = Up::Launcher::SERVER_OPTIONS
    [:min, :max].each do |bound|
      values = Up::Options::SETTINGS.select { |s| server_keys.include?(s.key) }.to_h do |s|
        edge = if s.type == :seconds
                 bound == :min ? 0.001 : Up::Options::MAX_TIMEOUT
               else
                 s[bound]
               end
        [s.key, edge]
      end
      settings = Up::Options.new(values).to_h.slice(*server_keys)
      Up::Server.new(->(_env) { [200, {}, []] }, settings)
    end
  end

  # The C side checks the head size too, for callers other than Up::Options: the parser
  # returns a head's length as an int, so a limit past 1 GiB is refused, not left to wrap.
  def test_server_new_refuses_a_head_size_past_the_parser_limit
    app = ->(_env) { [200, {}, []] }
    error = assert_raises(ArgumentError) do
      Up::Server.new(app, { max_head_size: Up::Options::MAX_HEAD_SIZE + 1 })
    end
    assert_equal "max_head_size must be at most #{Up::Options::MAX_HEAD_SIZE}", error.message
    assert_raises(ArgumentError) { Up::Server.new(app, { max_head_size: 2**32 + 1024 }) }
  end
end
