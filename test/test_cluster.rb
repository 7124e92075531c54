# frozen_string_literal: true

# -w N: a master forks N workers on one set of listening sockets and supervises them: a killed
# worker is replaced, one that fails to boot is retried after a growing back-off, one that
# stops beating is killed and replaced, TTIN/TTOU change their number, TERM stops them all
# without losing a request they took, QUIT at once.
require_relative "helper"
require_relative "support/lifecycle"

class TestCluster < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  PID_APP = "test/rackup/pid.ru"

  def test_killed_worker_is_replaced_and_serving_goes_on
    server = start_up("-w", "2", "-t", "1", app: PID_APP)
    pids = booted(server, 2)
    assert_equal 2, pids.uniq.size
    Process.kill(:KILL, pids.first)
    server.wait_for(/worker 0 \(pid #{pids.first}\) exited/)
    new_pid = server.wait_for(/worker 0 booted \(pid (?!#{pids.first})(\d+)\)/)[1].to_i
    refute_equal pids.first, new_pid
    served = Array.new(20) { get("/", port: server.port).body.to_i }
    assert served.all? { |pid| [new_pid, pids.last].include?(pid) }, "served by #{served.uniq}"
    close_sockets
    Process.kill(:TERM, server.pid)
    assert server.wait.success?
    [new_pid, pids.last].each { |pid| refute alive?(pid), "worker #{pid} outlived its master" }
  end

  def test_worker_killed_under_load_is_replaced_and_only_its_requests_in_flight_fail
    server = start_up("-w", "2", "-t", "2")
    pids = booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    Process.kill(:KILL, pids.first)
    server.wait_for(/worker 0 booted \(pid (?!#{pids.first})\d+\)/)
    load.wait_for_ok(200)
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("kill -9 a worker", result, lost)
    assert_empty result.failed
    assert_equal 0, result.refused
    assert lost.all? { |_id, pid| pid == pids.first }, "lost on a live worker: #{lost}"
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_term_under_load_loses_no_request_a_worker_took_and_exits_0
    server = start_up("-w", "2", "-t", "2")
    booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    server.signal(:TERM)
    status = server.wait
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("TERM", result, lost)
    assert status.success?, server.output
    assert_empty result.failed
    assert_empty lost
    assert_match(/TERM: stopping 2 workers/, server.output)
    # After the stop nothing listens: refused at once, not left waiting in a backlog.
    assert_raises(Errno::ECONNREFUSED) { TCPSocket.new("127.0.0.1", server.port) }
  end

  def test_quit_stops_at_once
    server = start_up("-w", "2", "-t", "1", "--shutdown-timeout", "60", env: { "UP_TEST_DELAY" => "30" })
    pids = booted(server, 2)
    sock = slow_request_in_flight(server.port)
    server.signal(:QUIT)
    assert server.wait(timeout: 10).success?
    assert_match(/QUIT: stopping at once/, server.output)
    assert closed_by_server?(sock)
    pids.each { |pid| refute alive?(pid) }
  end

  def test_worker_that_fails_to_boot_is_retried_with_a_growing_back_off
    File.write(File.join(@dir, "broken.ru"), "raise 'boom at boot'\n")
    server = start_up("-w", "2", "--no-preload", app: File.join(@dir, "broken.ru"), wait: false)
    server.wait_for(/listening on/)
    server.wait_for(/worker 0 \(pid \d+\) failed to boot \(.*; 1 in a row\); next try in 0.5 s/)
    server.wait_for(/worker 0 \(pid \d+\) failed to boot \(.*; 2 in a row\); next try in 1.0 s/)
    assert_match(/boom at boot/, server.output)
    server.signal(:TERM)
    assert server.wait.success?, "the master died with its workers"
  end

  def test_worker_that_stops_beating_is_killed_and_replaced
    server = start_up("-w", "2", "--worker-timeout", "1")
    pids = booted(server, 2)
    Process.kill(:STOP, pids.first)
    server.wait_for(/worker 0 \(pid #{pids.first}\) sent no heartbeat for 1.0 s; killing it/)
    server.wait_for(/worker 0 \(pid #{pids.first}\) exited/)
    new_pid = server.wait_for(/worker 0 booted \(pid (?!#{pids.first})(\d+)\)/)[1].to_i
    refute alive?(pids.first)
    assert alive?(pids.last), "a worker that beats was killed too"
    assert alive?(new_pid)
  end

  # The heartbeat comes from a Ruby thread: app threads that keep the GVL busy delay it by
  # a time slice each (100 ms), far from the timeout; the worker is not taken for hung, though
  # each call runs longer than the timeout. (A 1 s timeout was too close when other work
  # loaded the machine: 4 spinning threads per worker and 2 workers on 2 shared cores.)
  def test_worker_whose_app_threads_hog_the_gvl_is_not_taken_for_hung
    File.write(File.join(@dir, "busy.ru"), <<~RU)
      run lambda { |env|
        t = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 3
        x = 0
        x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t
        [200, {}, [Process.pid.to_s]]
      }
    RU
    server = start_up("-w", "2", "-t", "4", "--worker-timeout", "2", app: File.join(@dir, "busy.ru"))
    booted(server, 2)
    socks = Array.new(6) { connect(server.port).tap { |s| s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n") } }
    socks.each { |s| assert_equal 200, read_response(s).status }
    close_sockets
    refute_match(/heartbeat/, server.output)
  end

  def test_ttin_adds_a_worker_and_ttou_removes_one_without_stopping_the_master
    server = start_up("-w", "2")
    pids = booted(server, 2)
    server.signal(:TTIN)
    third = server.wait_for(/worker 2 booted \(pid (\d+)\)/)[1].to_i
    refute_equal "T", process_state(server.pid)
    server.signal(:TTOU)
    server.wait_for(/worker 2 \(pid #{third}\) stopped/)
    server.signal(:TTOU)
    server.wait_for(/worker 1 \(pid #{pids.last}\) stopped/)
    server.signal(:TTOU)
    server.wait_for(/TTOU: one worker left/)
    refute_equal "T", process_state(server.pid)
    assert alive?(pids.first)
    assert_equal "1", version_and_pid(server.port).first
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_workers_report_multiprocess
    server = start_up("-w", "2", "-t", "0", app: "test/rackup/multiprocess.ru")
    assert_equal "true", get("/", port: server.port).body
  end

  def test_process_titles_tell_the_master_from_the_workers
    server = start_up("-w", "2")
    pids = booted(server, 2)
    app = File.basename(File.dirname(File.expand_path(APP, CLIProcess::ROOT)))
    assert_equal "up_ruby #{Up::VERSION} master [#{app}] tcp://127.0.0.1:#{server.port}",
                 File.read("/proc/#{server.pid}/cmdline").delete("\0")
    pids.each_with_index do |pid, i|
      assert_equal "up_ruby #{Up::VERSION} worker #{i} [#{app}] tcp://127.0.0.1:#{server.port}",
                   File.read("/proc/#{pid}/cmdline").delete("\0")
    end
  end

  # A worker runs the master's traps from its fork until it has its own. A stop in that window
  # must neither wake the master (the worker holds a copy of its pipe) nor be lost: the worker
  # stops as soon as it can. This runs a worker's start as the fork does, with the master's
  # TERM handler in place and a TERM delivered before the worker's own traps.
  def test_stop_that_reaches_a_worker_before_its_traps_is_kept
    require "up/launcher"
    master_signals = Up::SignalPipe.new
    listener = TCPServer.new("127.0.0.1", 0)
    check_r, check_w = IO.pipe
    pipe_r, pipe_w = IO.pipe
    pid = fork do
      master_signals.trap("TERM") # the handler the fork inherits (installed in the master)
      Process.kill(:TERM, Process.pid)
      sleep 0.01 while master_signals.strays.empty?
      Up::Cluster::Worker.new(
        index: 0, phase: 0, pipe: pipe_w, check: check_r, master_signals: master_signals, close: [check_w, pipe_r],
        options: { worker_timeout: 60 }, server_options: { threads: 1, shutdown_timeout: 5, multiprocess: true },
        sockets: [listener], log: Up::Log.new(StringIO.new), hooks: Up::Hooks.new, app: ->(_) { [200, {}, []] },
        load_app: nil, title: "test worker"
      ).run
    rescue Exception # rubocop:disable Lint/RescueException
      exit!(3) # never minitest's at_exit in the fork
    end
    pipe_w.close
    check_r.close
    status = nil
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    until (status = Process.wait2(pid, Process::WNOHANG)&.last) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.05
    end
    assert status, "the worker went on serving after the stop"
    assert status.success?
    assert_empty master_signals.take, "the worker woke the master"
  ensure
    if pid && status.nil?
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
    master_signals&.close
    [listener, check_w, pipe_r].each { |io| io&.close unless io&.closed? }
  end

  # The same window for HUP: logrotate renamed the log while the worker was starting. The
  # worker reopens its log once its traps are in, instead of writing to the renamed file.
  def test_log_reopen_that_reaches_a_worker_before_its_traps_is_kept
    require "up/launcher"
    Dir.mktmpdir do |dir|
      path = File.join(dir, "up.log")
      log = Up::Log.open(path)
      master_signals = Up::SignalPipe.new
      listener = TCPServer.new("127.0.0.1", 0)
      pid = fork do
        master_signals.trap("HUP", "TERM")
        File.rename(path, "#{path}.1")
        Process.kill(:HUP, Process.pid)
        Process.kill(:TERM, Process.pid)
        sleep 0.01 while master_signals.strays.size < 2
        check_r, = IO.pipe
        Up::Cluster::Worker.new(
          index: 0, phase: 0, pipe: IO.pipe.last, check: check_r, master_signals: master_signals, close: [],
          options: { worker_timeout: 60 }, server_options: { threads: 1, shutdown_timeout: 5, multiprocess: true },
          sockets: [listener], log: log, hooks: Up::Hooks.new, app: ->(_) { [200, {}, []] },
          load_app: nil, title: "test worker"
        ).run
      rescue Exception # rubocop:disable Lint/RescueException
        exit!(3) # never minitest's at_exit in the fork
      end
      _, status = Process.wait2(pid)
      assert status.success?, "the worker's exit: #{status.inspect}"
      assert File.exist?(path), "the worker did not reopen its log"
      assert_includes File.read(path), "worker 0 reopened #{path}"
      assert_empty master_signals.take, "the worker woke the master"
    ensure
      listener&.close
      master_signals&.close
    end
  end
end
