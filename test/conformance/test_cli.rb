# frozen_string_literal: true

# The command line every runtime shares (docs/configuration.md): -v, -h, the one-line errors
# (the same words with the runtime's own name, status 1, nothing started) with --trace or
# UP_TRACE=1 for the backtrace, the start log and process titles, and a stop on TERM or INT
# with status 0.
require_relative "helper"
require "socket"
require "tmpdir"
require "up/options"
require "up/version"

class TestConformanceCLI < ConformanceTest
  def run_command(*args)
    Conformance.run_command(*args)
  end

  def test_version_prints_the_name_and_version
    status, out = run_command("-v")
    assert status.success?
    assert_equal "UP! #{Up::VERSION}\n", out
  end

  # The options a runtime refuses ("not supported by up_node yet"): its --help leaves them out.
  UNSUPPORTED = {
    "up_node" => %w[--control-url --control-token --access-log --worker-max-rss --acme-domain --refork-after],
    "up" => %w[--worker-max-rss --acme-domain --refork-after]
  }.freeze

  def test_help_prints_the_usage_and_every_option_the_runtime_supports
    status, out = run_command("-h")
    assert status.success?
    assert out.start_with?("Usage: #{runtime} [options] [config.ru]\n"), out
    hidden = UNSUPPORTED.fetch(runtime, [])
    flags = Up::Options::SETTINGS.map(&:flag).grep(/\A--/) - hidden
    (flags + %w[--version --help]).each { |flag| assert_includes out, flag }
    hidden.each { |flag| refute_includes out, flag }
  end

  # Runs the runtime on config.ru in a directory of its own holding files (name => text).
  def boot(files, *args, env: {})
    Dir.mktmpdir do |dir|
      files.each { |name, text| File.write(File.join(dir, name), text) }
      return Conformance.run_command("-b", "127.0.0.1", "-p", "0", "-w", "1", *args, "config.ru", chdir: dir, env: env)
    end
  end

  # What a start said, but the log's progress lines ("[time] compiling config.ru…").
  def said(out)
    out.lines.grep_v(/\A\[\d{4}-/).join
  end

  def test_a_syntax_error_at_the_end_of_a_one_line_config_ru_is_on_its_line
    status, out = boot({ "config.ru" => 'run ->(env) { [200, {}, ["hi"]] ' })
    assert_equal 1, status.exitstatus, out
    assert_match(/\A#{runtime}: config\.ru:1: syntax error, unexpected (token )?end-of-input\b.*\n\z/, said(out))
  end

  def test_a_syntax_error_inside_config_ru_names_its_line
    status, out = boot({ "config.ru" => "x = 1\ny = (2 +* 3)\nrun ->(env) { [200, {}, [y.to_s]] }\n" })
    assert_equal 1, status.exitstatus, out
    assert_match(/\A#{runtime}: config\.ru:2: syntax error, unexpected\b.*\n\z/, said(out))
  end

  APP_THAT_RAISES = {
    "config.ru" => "require_relative \"app\"\nrun App\n",
    "app.rb" => "class App\n  def self.call(_env) = [200, {}, []]\nend\nraise \"no database\"\n"
  }.freeze

  def test_an_exception_while_loading_the_app_names_the_apps_line
    status, out = boot(APP_THAT_RAISES)
    assert_equal 1, status.exitstatus, out
    assert_equal "#{runtime}: app.rb:4: no database (RuntimeError)\n", said(out)
  end

  def test_trace_and_up_trace_add_the_backtrace
    [[["--trace"], {}], [[], { "UP_TRACE" => "1" }]].each do |args, env|
      status, out = boot(APP_THAT_RAISES, *args, env: env)
      assert_equal 1, status.exitstatus, out
      first, *trace = said(out).lines
      assert_equal "#{runtime}: app.rb:4: no database (RuntimeError)\n", first
      assert_match(%r{/app\.rb:4\b.*no database}, trace.first)
      assert_match(%r{/config\.ru:1\b}, trace.join, "the frame that required app.rb")
    end
  end

  def test_a_missing_gem_is_named_with_how_to_add_it
    status, out = boot({ "config.ru" => "# an app\nrequire \"no_such_gem_for_up/base\"\nrun ->(env) { [200, {}, []] }\n" })
    assert_equal 1, status.exitstatus, out
    assert_equal "#{runtime}: config.ru:2: cannot load such file -- no_such_gem_for_up/base; " \
                 "is its gem in the Gemfile? (bundle add no_such_gem_for_up)\n", said(out)
  end

  # The line before "listening on", and `ps`'s titles: up_ruby's pattern with the runtime's name.
  def test_the_start_log_and_the_process_titles_say_what_runs
    Dir.mktmpdir do |tmp|
      dir = File.join(tmp, "shop")
      FileUtils.mkdir_p(File.join(dir, "config"))
      File.write(File.join(dir, "config.ru"), "run ->(env) { [200, {}, [\"hi\"]] }\n")
      File.write(File.join(dir, "config", "up.rb"), "threads 3\n")
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", "-e", "production", "config.ru",
                              command: [Conformance::COMMAND], env: { "XDG_CACHE_HOME" => Conformance::CACHE }, chdir: dir)
      server.wait_for(/worker 0\b.*booted/)
      server.wait_for(/worker 1\b.*booted/)
      threads = runtime == "up_ruby" ? "threads 3" : "one thread \\(Node\\)"
      assert_match(/UP! #{Regexp.escape(Up::VERSION)} \(#{runtime}, (ruby |node v)\d+\.\d+\.\d+\): environment production, config config\/up\.rb, app config\.ru, workers 2, #{threads}, preload\n/,
                   server.output)
      bind = "tcp://127.0.0.1:#{server.port}"
      assert_equal "#{runtime} #{Up::VERSION} master [shop] #{bind}", title(server.pid)
      workers = IO.popen(["ps", "-o", "pid=", "--ppid", server.pid.to_s], &:read).split.map(&:to_i)
      assert_equal ["#{runtime} #{Up::VERSION} worker 0 [shop] #{bind}", "#{runtime} #{Up::VERSION} worker 1 [shop] #{bind}"],
                   workers.map { |pid| title(pid) }.sort
      server.signal(:TERM)
      assert server.wait(timeout: 15).success?, server.output
    ensure
      server&.stop
    end
  end

  def title(pid)
    File.read("/proc/#{pid}/cmdline").delete("\0").strip
  end

  # argv => the one line that says what is wrong
  USAGE_ERRORS = {
    %w[--frobnicate] => "invalid option: --frobnicate",
    %w[--port abc] => "invalid argument: --port abc",
    %w[-p 65536] => "--port must be between 0 and 65535",
    %w[--head-timeout 100000] => "--head-timeout must be between 0 and 86400 seconds",
    %w[--max-head-size 100] => "--max-head-size must be between 256 and 1073741824"
  }.freeze

  USAGE_ERRORS.each do |argv, message|
    define_method("test_usage_error_#{argv.join("_").delete("-")}_is_one_line_and_status_1") do
      status, out = run_command(*argv, File.join(Conformance::APPS, "http.ru"))
      assert_equal 1, status.exitstatus, out
      assert_equal "#{runtime}: #{message}\nTry '#{runtime} --help'.\n", out
    end
  end

  def test_missing_config_ru_is_one_line_and_status_1
    status, out = run_command("-b", "127.0.0.1", "-p", "0", "nope/config.ru")
    assert_equal 1, status.exitstatus
    assert_equal "#{runtime}: nope/config.ru not found\n", out
  end

  # up_ruby's words are the reference: the bind as given to -b (tcp://) and the OS's message.
  def test_port_in_use_is_one_line_and_status_1
    taken = TCPServer.new("127.0.0.1", 0)
    port = taken.addr[1]
    status, out = run_command("-b", "127.0.0.1", "-p", port.to_s, "-w", "1", File.join(Conformance::APPS, "http.ru"))
    assert_equal 1, status.exitstatus, out
    assert_match(%r{\A#{runtime}: cannot listen on tcp://127\.0\.0\.1:#{port}: Address already in use\b.*\n\z}, out)
  ensure
    taken&.close
  end

  %w[TERM INT].each do |signal|
    define_method("test_#{signal.downcase}_stops_the_server_with_status_0") do
      server = start_own_server("http.ru")
      assert_equal 200, get("/").status
      server.signal(signal)
      assert server.wait(timeout: 15).success?, server.output
    end
  end
end
