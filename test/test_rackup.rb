# frozen_string_literal: true

# `rackup -s up` finds UP! through lib/rackup/handler/up.rb and serves the app with the
# options rackup passes (:Host, :Port, -O pairs); a bad one ends it with one line and status 1.
# USR2 restarts it in place like up_ruby.
require_relative "helper"
require_relative "support/cli_process"
require "rackup"
require "tmpdir"

class TestRackup < Minitest::Test
  include UpTestHelpers

  HELLO = "examples/hello/config.ru"

  def rackup(*args, wait: true)
    CLIProcess.new("-s", "up", "-o", "127.0.0.1", "-p", "0", *args, HELLO,
                   wait: wait, command: [RbConfig.ruby, "-Ilib", Gem.bin_path("rackup", "rackup")])
  end

  def test_rackup_dash_s_up_serves_the_app
    server = rackup("-O", "threads=2")
    assert_match(/threads 2/, server.output)
    assert_equal "Hello World\n", get("/", port: server.port).body
    server.signal(:INT)
    assert server.wait.success?, server.output
  ensure
    server&.stop
  end

  # -O values are Strings; a timeout may have a fraction (Integer() once refused "0.5").
  def test_a_fractional_timeout_from_dash_o_boots_and_serves
    server = rackup("-O", "head_timeout=0.5", "-O", "keepalive-timeout=1.5")
    assert_equal "Hello World\n", get("/", port: server.port).body
    server.signal(:INT)
    assert server.wait.success?, server.output
  ensure
    server&.stop
  end

  # USR2 re-executes rackup in place with the command line it was started with, Ruby's -I
  # included (rackup has consumed its own options from ARGV by the time UP! runs).
  def test_usr2_restarts_rackup_in_place_with_its_arguments
    server = rackup("-O", "threads=2")
    server.signal(:USR2)
    server.wait_for(/re-executing \S*ruby\S* -Ilib \S*rackup -s up -o 127.0.0.1 -p 0 -O threads=2 #{HELLO}/)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on http:\/\/127.0.0.1:#{server.port} \(pid #{server.pid}, threads 2\)/)
    assert_equal "Hello World\n", get("/", port: server.port).body
    close_sockets
    server.signal(:INT)
    assert server.wait.success?, server.output
  ensure
    server&.stop
  end

  # Each of these once reached Up::Server.new, which refused it: a backtrace, then a crash.
  BAD_VALUES = [
    # rackup arguments                message
    [%w[-O head_timeout=100000],      "-O head_timeout must be between 0 and 86400 seconds"],
    [%w[-O head-timeout=0],           "-O head-timeout must be between 0 and 86400 seconds"],
    [%w[-O max_head_size=100],        "-O max_head_size must be between 256 and 1073741824"],
    [%w[-O max_pipeline=0],           "-O max_pipeline must be between 1 and 4294967295"],
    [%w[-O threads=abc],              '-O threads must be an integer, not "abc"'],
    [%w[-O threads],                  "-O threads must be an integer, not true"],
    [%w[-p 70000],                    "-p must be between 0 and 65535"]
  ].freeze

  def test_a_bad_value_is_one_line_and_status_1
    BAD_VALUES.each do |args, message|
      process = rackup(*args, wait: false)
      status = process.wait(timeout: 20)
      assert_equal 1, status.exitstatus, "#{args.join(" ")}: #{process.output}"
      assert_equal "up: #{message}\n", process.output
      refute_match(/double free|Aborted|\.rb:\d+/, process.output)
    end
  end

  def test_a_port_in_use_is_one_line_and_status_1
    taken = TCPServer.new("127.0.0.1", 0)
    port = taken.addr[1]
    process = CLIProcess.new("-s", "up", "-o", "127.0.0.1", "-p", port.to_s, HELLO,
                             wait: false, command: [RbConfig.ruby, "-Ilib", Gem.bin_path("rackup", "rackup")])
    assert_equal 1, process.wait(timeout: 20).exitstatus, process.output
    assert_equal "up: cannot listen on tcp://127.0.0.1:#{port}: Address already in use - bind(2) for 127.0.0.1:#{port}\n",
                 process.output
  ensure
    taken&.close
  end

  def test_trace_adds_the_backtrace_of_a_failed_start
    taken = TCPServer.new("127.0.0.1", 0)
    process = CLIProcess.new("-s", "up", "-o", "127.0.0.1", "-p", taken.addr[1].to_s, "-O", "trace", HELLO,
                             wait: false, command: [RbConfig.ruby, "-Ilib", Gem.bin_path("rackup", "rackup")])
    assert_equal 1, process.wait(timeout: 20).exitstatus, process.output
    assert_match(/Address already in use.*\(Errno::EADDRINUSE\)\n(\s+from .*\n)+/, process.output)
    assert process.output.end_with?("up: cannot listen on tcp://127.0.0.1:#{taken.addr[1]}: " \
                                    "Address already in use - bind(2) for 127.0.0.1:#{taken.addr[1]}\n"), process.output
  ensure
    taken&.close
  end

  def test_settings_come_from_host_port_and_dash_o_and_ignore_rackups_own_keys
    require "up/rack_handler"
    settings = Up::RackHandler.settings(Host: "127.0.0.1", Port: "8080", environment: "development",
                                        config: "/elsewhere/config.ru", pid: nil, threads: "0",
                                        "max-headers": "50", write_timeout: "2.5")
    assert_equal({ bind: ["127.0.0.1"], port: 8080, workers: 1, threads: 0, max_headers: 50,
                   write_timeout: 2.5, rackup: "config.ru" },
                 settings.slice(:bind, :port, :workers, :threads, :max_headers, :write_timeout, :rackup))
  end

  def test_handler_is_registered_under_up
    require "rackup/handler/up"
    assert_equal Up::RackHandler, Rackup::Handler.get("up")
  end

  # As Puma: the config file is below what the user typed and above what the caller only
  # defaulted. rails server lists the typed keys in :user_supplied_options; rackup cannot.
  def test_the_config_file_is_below_typed_options_and_above_defaults
    require "up/rack_handler"
    Dir.mktmpdir do |dir|
      config = File.join(dir, "up.rb")
      File.write(config, "port 4000\nthreads 3\nbind 'tcp://0.0.0.0'\n")
      rails_like = Up::RackHandler.settings(Host: "localhost", Port: 3000, config_file: config,
                                            user_supplied_options: %i[Host])
      assert_equal({ bind: ["localhost"], port: 4000, threads: 3 }, rails_like.slice(:bind, :port, :threads))
      rackup_like = Up::RackHandler.settings(Host: "localhost", Port: 9292, config_file: config)
      assert_equal({ bind: ["localhost"], port: 9292, threads: 3 }, rackup_like.slice(:bind, :port, :threads))
    end
  end

  def test_a_bad_line_in_the_config_file_is_one_line_and_status_1
    Dir.mktmpdir do |dir|
      config = File.join(dir, "up.rb")
      File.write(config, "threads 2\nworkerz 4\n")
      process = rackup("-O", "config_file=#{config}", wait: false)
      assert_equal 1, process.wait(timeout: 20).exitstatus
      assert_equal "up: #{config}:2: unknown directive workerz\n", process.output
    end
  end

  def test_the_handler_is_found_under_rack_handler_too
    require "rack/handler/up"
    assert_equal Up::RackHandler, Rack::Handler::Up
    assert_equal Up::RackHandler, Rackup::Handler.get("up")
  end
end
