# frozen_string_literal: true

# Restarts under load, as a deploy does them: USR2 re-executes the master in place (same pid)
# on the same sockets, loads the app again, and lets the old workers drain only once new ones
# serve; USR1 with --no-preload replaces the workers one at a time, each on the app's current
# code; USR1 with preload says so and does a hot restart. Nothing is refused, no request
# fails, and the new code is served afterwards.
require_relative "helper"
require_relative "support/lifecycle"

class TestRestart < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  def test_usr2_under_load_refuses_nothing_fails_nothing_and_serves_the_new_code
    server = start_up("-w", "2", "-t", "2")
    old = booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    File.write(@version_file, "2")
    server.signal(:USR2)
    server.wait_for(/hot restart: 2 new workers serve; 2 old workers drain/)
    old.each_with_index { |pid, i| server.wait_for(/worker #{i} \(pid #{pid}\) stopped/) }
    load.wait_for_ok(200)
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("USR2 (hot restart)", result, lost)
    assert_equal 0, result.refused
    assert_empty result.failed
    assert_empty lost
    assert_equal 2, server.output.scan(/master #{server.pid} listening on/).size, "not re-executed in place"
    assert_includes result.bodies.map { |b| b.split.first }.uniq.sort, "2"
    10.times { assert_equal "2", version_and_pid(server.port).first }
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_usr1_without_preload_replaces_workers_one_at_a_time_under_load
    server = start_up("-w", "2", "-t", "2", "--no-preload")
    old = booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    File.write(@version_file, "2")
    server.signal(:USR1)
    server.wait_for(/phased restart done/)
    load.wait_for_ok(200)
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("USR1 (phased restart, --no-preload)", result, lost)
    assert_equal 0, result.refused
    assert_empty result.failed
    assert_empty lost
    # One at a time: worker 0's old process has gone before worker 1's replacement is forked.
    log = server.output
    assert_operator log.index(/worker 0 \(pid #{old[0]}\) stopped/), :<, log.index(/worker 1 booted \(pid (?!#{old[1]})\d+\)/)
    refute_match(/hot restart/, log)
    old.each { |pid| refute alive?(pid) }
    10.times { assert_equal "2", version_and_pid(server.port).first }
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_usr1_with_preload_says_it_needs_no_preload_and_hot_restarts
    server = start_up("-w", "2")
    old = booted(server, 2)
    File.write(@version_file, "2")
    server.signal(:USR1)
    server.wait_for(/USR1: a phased restart needs --no-preload/)
    server.wait_for(/hot restart: 2 new workers serve; 2 old workers drain/)
    old.each_with_index { |pid, i| server.wait_for(/worker #{i} \(pid #{pid}\) stopped/) }
    assert alive?(server.pid)
    10.times { assert_equal "2", version_and_pid(server.port).first }
  end

  def test_usr2_in_single_mode_reexecutes_in_place_after_the_request_in_flight
    server = start_up("-w", "1", "-t", "2", env: { "UP_TEST_DELAY" => "0.5" })
    sock = slow_request_in_flight(server.port)
    File.write(@version_file, "2")
    server.signal(:USR2)
    assert_equal "1 #{server.pid}", read_response(sock).body
    sock.close # (the server closes it too, lingering until we do)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    assert_equal ["2", server.pid], version_and_pid(server.port)
    server.signal(:TERM)
    assert server.wait.success?
  end

  def test_usr2_in_single_mode_under_load_refuses_nothing_fails_nothing
    server = start_up("-w", "1", "-t", "2")
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    File.write(@version_file, "2")
    server.signal(:USR2)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    load.wait_for_ok(200)
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("USR2 (single mode)", result, lost)
    assert_equal 0, result.refused
    assert_empty result.failed
    assert_empty lost
    assert_equal ["2", server.pid], version_and_pid(server.port)
  end

  # A deploy whose code does not load: the re-executed master says so and the old workers
  # go on serving the old code; once the code is fixed, new workers take over.
  def test_usr2_with_an_app_that_does_not_load_keeps_the_old_workers_serving
    app = File.join(@dir, "config.ru")
    File.write(app, "run ->(env) { [200, {}, ['old']] }\n")
    server = start_up("-w", "2", app: app)
    old = booted(server, 2)
    File.write(app, "raise 'broken deploy'\n")
    server.signal(:USR2)
    server.wait_for(/hot restart: the app does not load; the old workers keep serving: .*broken deploy/)
    server.wait_for(/worker 0 \(pid \d+\) failed to boot/)
    assert_equal "old", get("/", port: server.port).body
    old.each { |pid| assert alive?(pid) }
    File.write(app, "run ->(env) { [200, {}, ['new']] }\n")
    server.wait_for(/hot restart: 2 new workers serve; 2 old workers drain/, timeout: 40)
    old.each_with_index { |pid, i| server.wait_for(/worker #{i} \(pid #{pid}\) stopped/) }
    assert_equal "new", get("/", port: server.port).body
  end

  # The same with --no-preload: the first new worker fails to boot, the phased restart stops
  # there, and the old workers go on serving.
  def test_usr1_with_an_app_that_does_not_load_stops_and_keeps_the_old_workers_serving
    app = File.join(@dir, "config.ru")
    File.write(app, "run ->(env) { [200, {}, ['old']] }\n")
    server = start_up("-w", "2", "--no-preload", app: app)
    old = booted(server, 2)
    File.write(app, "raise 'broken deploy'\n")
    server.signal(:USR1)
    server.wait_for(/phased restart stopped: workers not yet replaced keep serving the old code/)
    assert_match(/broken deploy/, server.output)
    old.each { |pid| assert alive?(pid) }
    3.times { assert_equal "old", get("/", port: server.port).body }
  end

  def test_usr1_in_single_mode_restarts_in_place_too
    server = start_up("-w", "1")
    File.write(@version_file, "2")
    server.signal(:USR1)
    server.wait_for(/USR1 \(one process: a phased restart is a restart in place\)/)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    assert_equal ["2", server.pid], version_and_pid(server.port)
  end
end
