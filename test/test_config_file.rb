# frozen_string_literal: true

# The config file (-C FILE, or config/up.rb in the current directory): a DSL that reads like
# Puma's; the command line wins over it, and it wins over the environment (PORT,
# WEB_CONCURRENCY, MAX_THREADS). An unknown directive or a bad value is one line that names the
# file and the line.
require_relative "helper"
require_relative "support/cli_process"
require "up/config_file"
require "tmpdir"

class TestConfigFile < Minitest::Test
  include UpTestHelpers

  HELLO = File.join(CLIProcess::ROOT, "test/rackup/hello.ru")
  ENV_APP = File.join(CLIProcess::ROOT, "test/rackup/rack_env.ru")

  def write(dir, text, name = "up.rb")
    File.join(dir, name).tap { |path| File.write(path, text) }
  end

  def test_directives_become_settings_named_by_file_and_line
    Dir.mktmpdir do |dir|
      path = write(dir, <<~RUBY)
        port 8080
        bind "tcp://127.0.0.1"
        bind "unix:///tmp/up.sock"
        workers ENV.fetch("NO_SUCH_VARIABLE", 3).to_i
        threads 1, 8
        preload_app!
        pidfile "up.pid"
        max_body_size 1024
        before_fork { $config_file_hooks << :before_fork }
        after_worker_fork { |i| $config_file_hooks << [:after_worker_fork, i] }
      RUBY
      file = Up::ConfigFile.load(path)
      assert_equal({ port: 8080, bind: ["tcp://127.0.0.1", "unix:///tmp/up.sock"], workers: 3, threads: "1:8",
                     preload: true, pid_file: "up.pid", max_body_size: 1024 }, file.values)
      assert_equal "#{path}:1: port", file.names[:port]
      assert_equal "#{path}:3: bind", file.names[:bind]
      assert_equal "#{path}:5: threads", file.names[:threads]
      $config_file_hooks = [] # rubocop:disable Style/GlobalVars
      file.hooks.run(:before_fork)
      file.hooks.run(:after_worker_fork, 1)
      assert_equal [:before_fork, [:after_worker_fork, 1]], $config_file_hooks # rubocop:disable Style/GlobalVars
    end
  end

  def test_io_thread_forces_a_place_for_the_loop_or_leaves_it_to_each_worker
    Dir.mktmpdir do |dir|
      { "io_thread true" => true, "io_thread false" => false, "io_thread :auto" => nil }.each do |line, setting|
        file = Up::ConfigFile.load(write(dir, "#{line}\n"))
        value = Up::Options.new(file.values, names: file.names).to_h[:io_thread]
        setting.nil? ? assert_nil(value, line) : assert_equal(setting, value, line)
      end
    end
  end

  REFUSED = [
    # the file                   the message after "FILE:"
    ["port 80\nfrobnicate 3\n",  "2: unknown directive frobnicate"],
    ["before_fork\n",            "1: before_fork needs a block"],
    ["port 80\nport(\n",         "2: syntax error"]
  ].freeze

  def test_tls_host_directives_add_certificates_by_host_name
    Dir.mktmpdir do |dir|
      path = write(dir, <<~RUBY)
        bind "ssl://0.0.0.0:443"
        tls_host "api.test", cert_file: "api.crt", key_file: "api.key"
        tls_host "*.test", cert_file: "all.crt", key_file: "all.key", ca_file: "ca.crt"
        key_password_command "pass up"
      RUBY
      file = Up::ConfigFile.load(path)
      assert_equal [{ host: "api.test", cert_file: "api.crt", key_file: "api.key" },
                    { host: "*.test", cert_file: "all.crt", key_file: "all.key", ca_file: "ca.crt" }], file.values[:tls_hosts]
      assert_equal "#{path}:3: tls_host", file.names[:tls_hosts]
      assert_equal "pass up", Up::Options.new(file.values, names: file.names)[:key_password_command]
      File.write(path, %(tls_host "api.test", cert_file: "api.crt"\n))
      file = Up::ConfigFile.load(path)
      error = assert_raises(Up::Options::Error) { Up::Options.new(file.values, names: file.names) }
      assert_equal %(#{path}:1: tls_host "api.test" needs key_file:), error.message
    end
  end

  def test_acme_directives_add_names_and_set_the_rest
    Dir.mktmpdir do |dir|
      path = write(dir, <<~RUBY)
        acme_domain "example.com"
        acme_domain "WWW.example.com"
        acme_email "ops@example.com"
        acme_dir "/var/lib/up/acme"
        acme_staging true
      RUBY
      file = Up::ConfigFile.load(path)
      options = Up::Options.new(file.values, names: file.names)
      assert_equal %w[example.com www.example.com], options[:acme_domains]
      assert_equal ["ops@example.com", "/var/lib/up/acme", true], options.to_h.values_at(:acme_email, :acme_dir, :acme_staging)
      File.write(path, %(acme_domain "example.com"\nacme_domain "*.example.com"\n))
      file = Up::ConfigFile.load(path)
      error = assert_raises(Up::Options::Error) { Up::Options.new(file.values, names: file.names) }
      assert_match(/\A#{Regexp.escape(path)}:2: acme_domain "\*.example.com" is not a domain name/, error.message)
    end
  end

  def test_unknown_directives_and_broken_files_name_the_line
    Dir.mktmpdir do |dir|
      REFUSED.each do |text, message|
        path = write(dir, text)
        error = assert_raises(Up::ConfigFile::Error) { Up::ConfigFile.load(path) }
        assert error.message.start_with?("#{path}:#{message}"), "#{text.inspect}: #{error.message}"
      end
    end
  end

  def test_the_command_line_wins_over_the_file_and_the_file_over_the_environment
    Dir.mktmpdir do |dir|
      config = write(dir, "port 0\nthreads 3\nworkers 1\n")
      server = CLIProcess.new("-C", config, "-b", "127.0.0.1", "-t", "2", HELLO,
                              env: { "PORT" => "1", "MAX_THREADS" => "7", "WEB_CONCURRENCY" => "4" })
      assert_match(/\(pid \d+, threads 2\)/, server.output, "threads from -t, workers from the file")
      assert_equal "Hello World", get("/", port: server.port).body # port 0 from the file, not PORT
    ensure
      server&.stop
    end
  end

  def test_the_environment_sets_what_nothing_else_does
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", HELLO,
                            env: { "WEB_CONCURRENCY" => "1", "MIN_THREADS" => "1", "MAX_THREADS" => "3" })
    assert_match(/\(pid \d+, threads 3\)/, server.output)
  ensure
    server&.stop
  end

  def test_config_up_rb_in_the_current_directory_is_read
    Dir.mktmpdir do |dir|
      Dir.mkdir(File.join(dir, "config"))
      write(dir, "bind 'tcp://127.0.0.1:0'\nworkers 1\nthreads 4\n", "config/up.rb")
      server = CLIProcess.new(HELLO, chdir: dir)
      assert_match(/\(pid \d+, threads 4\)/, server.output)
      assert_equal "Hello World", get("/", port: server.port).body
    ensure
      server&.stop
    end
  end

  def test_a_bad_value_in_the_file_is_one_line_naming_file_and_line
    Dir.mktmpdir do |dir|
      config = write(dir, "workers 1\nport 99999\n")
      server = CLIProcess.new("-C", config, HELLO, wait: false)
      assert_equal 1, server.wait(timeout: 20).exitstatus
      assert_equal "up_ruby: #{config}:2: port must be between 0 and 65535\nTry 'up_ruby --help'.\n", server.output
    end
  end

  def test_a_missing_config_file_is_a_clear_error
    server = CLIProcess.new("-C", "/nonexistent/up.rb", HELLO, wait: false)
    assert_equal 1, server.wait(timeout: 20).exitstatus
    assert_match %r{\Aup_ruby: cannot read the config file /nonexistent/up\.rb: No such file}, server.output
  end

  # The hooks of a config file given to up_ruby run where Puma runs them: before_fork and
  # after_worker_fork in the master, before_worker_boot and before_worker_shutdown in each
  # worker, with the worker's index.
  def test_hooks_in_the_file_run_in_the_master_and_the_workers
    Dir.mktmpdir do |dir|
      log = File.join(dir, "hooks.log")
      config = write(dir, <<~RUBY)
        workers 2
        bind "tcp://127.0.0.1:0"
        def note(*words) = File.open(#{log.inspect}, "a") { |f| f.puts([*words, Process.pid].join(" ")) }
        before_fork { note("before_fork") }
        after_worker_fork { |i| note("after_worker_fork", i) }
        before_worker_boot { |i| note("before_worker_boot", i) }
        before_worker_shutdown { |i| note("before_worker_shutdown", i) }
      RUBY
      server = CLIProcess.new("-C", config, HELLO, wait: false)
      2.times { server.wait_for(/worker \d booted/) }
      server.signal(:TERM)
      assert server.wait.success?, server.output
      lines = File.readlines(log, chomp: true).map(&:split)
      master = server.pid
      assert_equal [%w[before_fork], %w[after_worker_fork 0], %w[after_worker_fork 1]],
                   lines.select { |*, pid| pid.to_i == master }.map { |words| words[0...-1] }
      workers = lines.reject { |*, pid| pid.to_i == master }.group_by(&:last)
      assert_equal 2, workers.size, lines.inspect
      workers.each_value do |mine|
        index = mine.first[1]
        assert_equal [["before_worker_boot", index], ["before_worker_shutdown", index]], mine.map { |w| w[0...-1] }
      end
      assert_equal %w[0 1], workers.values.map { |mine| mine.first[1] }.sort
    end
  end

  def test_environment_sets_rack_env
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-e", "staging", ENV_APP,
                            env: { "RACK_ENV" => "production" })
    assert_equal "staging", get("/", port: server.port).body
  ensure
    server&.stop
  end

  def test_rack_env_defaults_to_development
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", ENV_APP, env: { "RACK_ENV" => nil })
    assert_equal "development", get("/", port: server.port).body
  ensure
    server&.stop
  end
end
