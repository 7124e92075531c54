# frozen_string_literal: true

# UP! under systemd: the sd_notify messages a service manager gets on NOTIFY_SOCKET (read here
# by a datagram socket of the test's own), in order: READY=1 once serving, RELOADING=1 and
# READY=1 around a hot restart, STOPPING=1 when a stop begins, STATUS= with workers and
# requests, WATCHDOG=1 while the workers answer; and socket activation through Debian's
# systemd-socket-activate, with the unit and socket files of docs/systemd/.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/notify_listener"
require_relative "support/test_certificates"
require "open3"

class TestSystemd < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  DOCS = File.join(CLIProcess::ROOT, "docs", "systemd")

  def setup
    super
    @notify = NotifyListener.new(File.join(@dir, "notify.sock"))
  end

  def teardown
    super
    @notify&.close
  end

  def notify_env(**more)
    { "NOTIFY_SOCKET" => @notify.path }.merge(more)
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def test_cluster_says_ready_reloading_ready_stopping_in_order
    server = start_up("-w", "2", env: notify_env)
    ready = @notify.wait_for(READY: "1")
    assert_equal "workers 2/2, requests 0", ready["STATUS"]
    assert_equal "1", version_and_pid(server.port).first
    File.write(@version_file, "2")
    before = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
    server.signal(:USR2)
    reloading = @notify.wait_for(RELOADING: "1")
    after = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
    assert_includes before..after, Integer(reloading["MONOTONIC_USEC"])
    @notify.wait_for(READY: "1")
    # READY=1 of the new image comes once its workers serve the new code.
    assert_equal "2", version_and_pid(server.port).first
    @notify.wait_for(STATUS: /\Aworkers 2\/2, requests \d+\z/)
    server.signal(:TERM)
    @notify.wait_for(STOPPING: "1")
    assert server.wait.success?
    assert_equal [%w[READY], %w[RELOADING MONOTONIC_USEC], %w[READY], %w[STOPPING]],
                 @notify.steps.map { |m| m.keys - %w[STATUS at] }
  end

  def test_single_process_says_ready_and_stopping_with_its_requests
    server = start_up("-w", "1", env: notify_env)
    @notify.wait_for(READY: "1")
    3.times { version_and_pid(server.port) }
    @notify.wait_for(STATUS: /\Arequests 3, connections \d+\z/, timeout: 15)
    server.signal(:TERM)
    @notify.wait_for(STOPPING: "1")
    assert server.wait.success?
  end

  def test_watchdog_pings_while_workers_answer_and_stops_when_none_does
    server = start_up("-w", "2", "--worker-timeout", "6", env: notify_env("WATCHDOG_USEC" => "600000"))
    pids = booted(server, 2)
    @notify.wait_for(READY: "1")
    pings = @notify.collect(1.5).select { |m| m["WATCHDOG"] == "1" }.map { |m| m["at"] }
    assert_operator pings.size, :>=, 2
    gaps = pings.each_cons(2).map { |a, b| b - a }
    assert gaps.all? { |g| g < 0.6 }, "pings come more often than WATCHDOG_USEC: #{gaps}"
    # Both workers hang (stopped): once their heartbeats are late, the master stops pinging,
    # and systemd would restart the service.
    pids.each { |pid| Process.kill(:STOP, pid) }
    sleep_until_late = now + 3.5 # --worker-timeout 6: a worker beats every 1.5 s, is late after 3
    @notify.collect(sleep_until_late - now)
    assert_empty @notify.collect(1).select { |m| m["WATCHDOG"] == "1" }, "no ping while no worker answers"
    # The master kills the hung workers and forks new ones: the pings come back.
    server.wait_for(/worker 1 booted \(pid (?!#{pids[1]})\d+\)/)
    @notify.wait_for(WATCHDOG: "1", timeout: 10)
  ensure
    pids&.each { |pid| Process.kill(:CONT, pid) rescue nil } # rubocop:disable Style/RescueModifier
  end

  def test_socket_activation_serves_on_the_sockets_systemd_passes
    port = free_port
    unix = File.join(@dir, "up.sock")
    server = activate(["-l", "127.0.0.1:#{port}", "-l", unix, "--fdname=http:local"], ["-w", "2"])
    # systemd-socket-activate starts UP! on the first connection, which waits in the backlog.
    sock = TCPSocket.new("127.0.0.1", port)
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "1", read_response(sock).body.split.first
    server.wait_for(%r{listening on http://127\.0\.0\.1:#{port}, unix://#{Regexp.escape(unix)}})
    @notify.wait_for(READY: "1")
    assert_equal "1", unix_get(unix).split.first
    # A hot restart keeps the activated sockets.
    File.write(@version_file, "2")
    server.signal(:USR2)
    @notify.wait_for(RELOADING: "1")
    @notify.wait_for(READY: "1")
    assert_equal "2", version_and_pid(port).first
    assert_equal "2", unix_get(unix).split.first
    server.signal(:TERM)
    assert server.wait.success?
    assert File.socket?(unix), "the socket file is systemd's: it stays"
  ensure
    sock&.close
  end

  # What systemd does after a stop: it keeps the socket and listens on. Here the test holds
  # it, as systemd would, and passes it as fd 3 to a shell that execs UP! with LISTEN_PID set
  # to its own pid; a hot restart and a stop later, the socket still takes connections.
  def test_a_stop_leaves_the_passed_socket_listening_for_the_next_start
    listener = TCPServer.new("127.0.0.1", 0)
    port = listener.addr[1]
    env = { "LISTEN_FDS" => "1", "UP_TEST_VERSION_FILE" => @version_file, "UP_TEST_IDS" => @ids_file }
    script = 'LISTEN_PID=$$ exec "$0" "$@"'
    server = CLIProcess.new("-w", "2", APP, command: ["sh", "-c", script, RbConfig.ruby, CLIProcess::EXE],
                            env: env, wait: false, pass: { 3 => listener })
    (@processes ||= []) << server
    server.wait_for(%r{listening on http://127\.0\.0\.1:#{port}})
    assert_equal "1", version_and_pid(port).first
    server.signal(:USR2)
    server.wait_for(/hot restart: 2 new workers serve/)
    server.signal(:TERM)
    assert server.wait.success?
    client = TCPSocket.new("127.0.0.1", port)
    accepted = Timeout.timeout(5) { listener.accept }
    assert accepted, "the socket listens after UP! stopped"
  ensure
    [client, accepted, listener].each { |io| io&.close }
  end

  # A passed socket serves HTTPS when an ssl:// bind names its port; one no bind names serves
  # plain HTTP.
  def test_an_activated_socket_on_an_ssl_bind_port_serves_https
    cert = TestCertificates.ca.issue("localhost")
    tls_port = free_port
    plain_port = free_port
    server = activate(["-l", "127.0.0.1:#{tls_port}", "-l", "127.0.0.1:#{plain_port}"],
                      ["-w", "1", "-b", "ssl://127.0.0.1:#{tls_port}?cert=#{cert.cert_file}&key=#{cert.key_file}"])
    out, err, status = Timeout.timeout(30) do
      Open3.capture3("curl", "-sS", "--cacert", TestCertificates.ca.ca_file, "--resolve",
                     "localhost:#{tls_port}:127.0.0.1", "https://localhost:#{tls_port}/")
    end
    assert status.success?, err
    assert_equal "1", out.split.first
    server.wait_for(%r{listening on https://127\.0\.0\.1:#{tls_port}, http://127\.0\.0\.1:#{plain_port}})
    assert_equal "1", version_and_pid(plain_port).first
    server.signal(:TERM)
    assert server.wait.success?
  end

  # docs/systemd/up.service and up.socket as systemd would run them: ListenStream= and
  # FileDescriptorName= through systemd-socket-activate, ExecStart='s options, WatchdogSec=,
  # ExecReload= with $MAINPID, and a stop as KillMode=mixed makes it (TERM to the main
  # process), with /ready on --metrics-url turning 503 through the --stop-delay.
  def test_the_documented_unit_and_socket_files
    service = unit(File.join(DOCS, "up.service"))
    socket = unit(File.join(DOCS, "up.socket"))
    assert_equal "notify", service["Type"]
    assert_equal "mixed", service["KillMode"]
    assert_equal "up.socket", service["Requires"]
    argv = service["ExecStart"].split
    args = argv.drop(argv.index("up_ruby") + 1)
    assert_equal "config.ru", args.pop
    metrics_port = free_port
    args = args.map { |a| a.sub(/tcp:\/\/127\.0\.0\.1:\d+/, "tcp://127.0.0.1:#{metrics_port}") }
    port = free_port
    listen = socket["ListenStream"].sub(/\A0\.0\.0\.0:\d+\z/, "127.0.0.1:#{port}")
    watchdog_usec = (Float(service["WatchdogSec"]) * 1_000_000).to_i.to_s
    server = activate(["-l", listen, "--fdname=#{socket["FileDescriptorName"]}"], args,
                      env: { "WATCHDOG_USEC" => watchdog_usec })
    sock = TCPSocket.new("127.0.0.1", port)
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal 200, read_response(sock).status
    @notify.wait_for(READY: "1")
    assert_equal "200", curl_code("http://127.0.0.1:#{metrics_port}/ready")
    reload = service["ExecReload"].sub("/bin/kill", "kill")
    assert system({ "MAINPID" => server.pid.to_s }, "sh", "-c", reload)
    @notify.wait_for(RELOADING: "1")
    @notify.wait_for(READY: "1")
    load = LoadGenerator.new(port)
    load.wait_for_ok(50)
    server.signal(:TERM)
    @notify.wait_for(STOPPING: "1")
    assert_equal "503", curl_code("http://127.0.0.1:#{metrics_port}/ready")
    assert server.wait(timeout: Float(service["TimeoutStopSec"])).success?
    result = load.stop
    assert_empty result.failed
    assert_empty LoadGenerator.lost(result, @ids_file)
  ensure
    sock&.close
  end

  private

  # exe/up_ruby on lifecycle.ru under systemd-socket-activate, which passes only the variables
  # named with -E (and PATH): Ruby's and Bundler's are named here.
  def activate(activate_args, up_args, env: {})
    env = notify_env(**env).merge("UP_TEST_VERSION_FILE" => @version_file, "UP_TEST_IDS" => @ids_file)
    passed = %w[RUBYOPT RUBYLIB BUNDLE_GEMFILE GEM_HOME GEM_PATH BUNDLE_BIN_PATH].select { |v| ENV[v] }
    command = ["systemd-socket-activate", *activate_args, *(env.keys + passed).flat_map { |v| ["-E", v] },
               RbConfig.ruby, CLIProcess::EXE]
    process = CLIProcess.new(*up_args, APP, command: command, env: env, wait: false)
    (@processes ||= []) << process
    process.wait_for(/Listening on .* as 3/)
    process
  end

  # KEY=VALUE lines of a unit file (the last one wins, as systemd reads most of them).
  def unit(path)
    File.readlines(path, chomp: true).grep(/\A[A-Za-z]+=/).to_h { |line| line.split("=", 2) }
  end

  def free_port
    s = TCPServer.new("127.0.0.1", 0)
    s.addr[1]
  ensure
    s&.close
  end

  def unix_get(path)
    sock = UNIXSocket.new(path)
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    read_response(sock).body
  ensure
    sock&.close
  end

  def curl_code(url)
    out, = Timeout.timeout(15) { Open3.capture2("curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", url) }
    out
  end
end
