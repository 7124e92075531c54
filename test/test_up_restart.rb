# frozen_string_literal: true

# Signals and restarts on `up`, as up_ruby's test/test_restart.rb and
# test/test_cluster.rb hold up_ruby to them: USR2 re-executes `up` in place (same pid) on the
# same sockets and serves the changed config.ru, in one process and in a cluster, where the
# old workers drain only once the new ones serve; USR1 replaces a cluster's workers one at a
# time (each loads the app itself, so each new one has the new code) and is USR2 in one
# process; code that does not compile is said while the old code serves on; TTIN and TTOU add
# and remove a worker, never the last. Under load (test/support/load_generator.rb: keep-alive
# and new-connection clients throughout) nothing is refused and no request fails.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/up_process"

class TestUpRestart < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  # "VERSION PID" for every request; each ?id=ID is appended to $UP_TEST_IDS with the pid, as
  # test/rackup/lifecycle.ru does (LoadGenerator.lost), through Node's fs: Opal cannot block,
  # so there is no delay.
  APP = <<~RUBY
    ids = ENV["UP_TEST_IDS"]
    run lambda { |env|
      id = env["QUERY_STRING"][/\\Aid=(.+)\\z/, 1]
      line = "\#{id} \#{Process.pid}\\n"
      `require('node:fs').appendFileSync(\#{ids}, \#{line})` if id && ids
      [200, { "content-type" => "text/plain" }, ["VERSION \#{Process.pid}"]]
    }
  RUBY

  # LifecycleHelpers' directory, ids file and teardown, with config.ru written there.
  def setup
    super
    @rackup = File.join(@dir, "config.ru")
    write_app("1")
  end

  def write_app(version)
    File.write(@rackup, APP.sub("VERSION", version))
  end

  def start_up(*args)
    super(*args, app: @rackup, command: [RbConfig.ruby, UpProcess::EXE], env: { "XDG_CACHE_HOME" => UpProcess::CACHE })
  end

  # The pids of workers 0...n once each has booted (in any order), as `up`'s primary says it.
  def booted(server, n)
    Array.new(n) { |i| server.wait_for(/worker #{i} \(pid (\d+)\) booted/)[1].to_i }
  end

  def assert_nothing_failed(result)
    assert File.size?(@ids_file), "the app logged no ids: lost requests would go unseen"
    lost = LoadGenerator.lost(result, @ids_file)
    warn "load: #{name}: #{result}, #{lost.size} lost" if ENV["UP_LOAD_FIGURES"]
    assert_equal 0, result.refused, result.to_s
    assert_empty result.failed, result.to_s
    assert_empty lost, "requests the app took whose response never came"
  end

  def test_usr2_in_one_process_under_load_refuses_nothing_fails_nothing_and_serves_the_new_code
    server = start_up("-w", "1")
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    write_app("2")
    server.signal(:USR2)
    server.wait_for(/USR2: restarting in place/)
    server.wait_for(/re-executing .*exe\/up/)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    load.wait_for_ok(200)
    result = load.stop
    assert_nothing_failed(result)
    assert_equal 2, server.output.scan(/\(pid #{server.pid},/).size, "not re-executed in place"
    assert_includes result.bodies.map { |b| b.split.first }.uniq, "2"
    10.times { assert_equal ["2", server.pid], version_and_pid(server.port) }
    server.signal(:TERM)
    assert server.wait.success?
  end

  # An exec runs no exit handler: the access log's buffered lines are written before it, so
  # every request the app took before the restart has its line.
  def test_usr2_in_one_process_loses_no_access_log_line
    log = File.join(@dir, "access.log")
    server = start_up("-w", "1", "--access-log", log)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    server.signal(:USR2)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    load.wait_for_ok(200)
    load.stop
    server.signal(:TERM)
    assert server.wait.success?
    taken = File.readlines(@ids_file).map { |line| line.split.first }
    logged = File.read(log).scan(/GET \/\?id=(\S+) /).flatten
    refute_empty taken
    assert_empty taken - logged, "requests the app took with no access log line"
  end

  def test_usr1_in_one_process_restarts_in_place_too
    server = start_up("-w", "1")
    write_app("2")
    server.signal(:USR1)
    server.wait_for(/USR1 \(one process: a phased restart is a restart in place\)/)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    assert_equal ["2", server.pid], version_and_pid(server.port)
    server.signal(:TTIN)
    server.wait_for(/TTIN: one process \(-w 1\), no worker to add or remove; ignored/)
  end

  def test_usr2_in_a_cluster_under_load_drains_the_old_workers_once_the_new_serve
    server = start_up("-w", "2")
    old = booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    write_app("2")
    server.signal(:USR2)
    server.wait_for(/hot restart: 2 old workers serve until the new ones are up/)
    server.wait_for(/hot restart: 2 new workers serve; 2 old workers drain/)
    old.each { |pid| server.wait_for(/worker \d \(pid #{pid}\) stopped/) }
    load.wait_for_ok(200)
    result = load.stop
    assert_nothing_failed(result)
    assert_equal 2, server.output.scan(/master #{server.pid} listening on/).size, "not re-executed in place"
    assert_includes result.bodies.map { |b| b.split.first }.uniq, "2"
    10.times { assert_equal "2", version_and_pid(server.port).first }
    old.each { |pid| refute alive?(pid), "old worker #{pid} reaped" }
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_usr1_in_a_cluster_replaces_the_workers_one_at_a_time_under_load
    server = start_up("-w", "2")
    old = booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    write_app("2")
    server.signal(:USR1)
    server.wait_for(/phased restart: worker 0 \(pid \d+\) serves; pid #{old[0]} drains/)
    server.wait_for(/worker 0 \(pid #{old[0]}\) stopped/)
    server.wait_for(/phased restart: worker 1 \(pid \d+\) serves; pid #{old[1]} drains/)
    server.wait_for(/phased restart done: 2 workers replaced/)
    load.wait_for_ok(200)
    result = load.stop
    assert_nothing_failed(result)
    assert_equal 1, server.output.scan(/master #{server.pid} listening on/).size, "the primary stays"
    10.times { assert_equal "2", version_and_pid(server.port).first }
  end

  # Code that does not compile is said, and the old code serves on, in one process and in a
  # cluster; fixing it and signalling again finishes the restart.
  def test_a_restart_with_code_that_does_not_compile_keeps_the_old_code_serving
    [%w[-w 1], %w[-w 2]].each do |workers|
      write_app("1")
      server = start_up(*workers)
      File.write(@rackup, "run lambda { |env| [200, {}, [\"oops\"]] ]\n")
      server.signal(:USR2)
      server.wait_for(/the app does not compile; the (?:old code|workers) serve(?:s)? on: .*config\.ru:1/)
      assert_equal "1", version_and_pid(server.port).first
      write_app("2")
      server.signal(:USR2)
      server.wait_for(/re-executing/)
      Timeout.timeout(30) { sleep 0.05 until version_and_pid(server.port).first == "2" }
      server.stop
    end
  end

  def test_ttin_and_ttou_add_and_remove_a_worker_but_never_the_last
    server = start_up("-w", "2")
    pids = booted(server, 2)
    server.signal(:TTIN)
    server.wait_for(/TTIN: workers 3/)
    third = server.wait_for(/worker 2 \(pid (\d+)\) booted/)[1].to_i
    server.signal(:TTOU)
    server.wait_for(/TTOU: workers 2/)
    server.wait_for(/worker 2 \(pid #{third}\) stopped/)
    server.signal(:TTOU)
    server.wait_for(/TTOU: workers 1/)
    server.wait_for(/worker 1 \(pid #{pids[1]}\) stopped/)
    server.signal(:TTOU)
    server.wait_for(/TTOU: one worker left; not stopping it/)
    5.times { assert_equal ["1", pids[0]], version_and_pid(server.port) }
    server.signal(:TERM)
    assert server.wait.success?
  end
end
