# frozen_string_literal: true

# Restarts under load, as a deploy does them: USR2 re-executes the master in place (same pid)
# on the same sockets, loads the app again, and lets the old workers drain only once new ones
# serve. Nothing is refused, no request fails, and the new code is served afterwards.
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
end
