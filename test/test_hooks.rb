# frozen_string_literal: true

# Up::Hooks: blocks run by name, in the order added, and the runners call them at their
# points, each in the right process: before_fork and after_worker_fork in the master,
# before_worker_boot and before_worker_shutdown in the worker, on_restart before a re-exec.
require_relative "helper"
require_relative "support/lifecycle"
require "up/hooks"

class TestHooks < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  SERVER = [RbConfig.ruby, File.expand_path("support/hooks_server.rb", __dir__)].freeze

  def test_blocks_run_in_the_order_added_with_their_arguments
    calls = []
    hooks = Up::Hooks.new
    hooks.add(:before_worker_boot) { |i| calls << [:first, i] }
    hooks.add(:before_worker_boot) { |i| calls << [:second, i] }
    hooks.run(:before_worker_boot, 3)
    hooks.run(:on_restart)
    assert_equal [[:first, 3], [:second, 3]], calls
  end

  def test_an_unknown_hook_name_is_an_argument_error
    error = assert_raises(ArgumentError) { Up::Hooks.new.add(:after_fork) {} }
    assert_match(/unknown hook :after_fork/, error.message)
    assert_raises(ArgumentError) { Up::Hooks.new.run(:before_boot) }
  end

  # Each line: [name, args, pid, ppid].
  def hook_lines
    File.readlines(@hooks_file, chomp: true).map do |line|
      *words, pid, ppid = line.split
      [words.first, words.drop(1).map(&:to_i), pid.delete_prefix("pid=").to_i, ppid.delete_prefix("ppid=").to_i]
    end
  end

  def test_cluster_hooks_run_in_order_each_in_its_process_across_a_hot_restart
    @hooks_file = File.join(@dir, "hooks")
    server = start_up("-w", "2", env: { "UP_TEST_HOOKS" => @hooks_file }, command: SERVER)
    old = booted(server, 2)
    server.signal(:USR2)
    server.wait_for(/hot restart: 2 new workers serve/)
    old.each_with_index { |pid, i| server.wait_for(/worker #{i} \(pid #{pid}\) stopped/) }
    new = 2.times.map { |i| server.wait_for(/worker #{i} booted \(pid (?!#{old[i]})(\d+)\)/)[1].to_i }
    server.signal(:TERM)
    assert server.wait.success?
    lines = hook_lines
    master = server.pid

    in_master = lines.select { |_, _, pid| pid == master }.map { |name, args| [name, *args] }
    assert_equal [%w[before_fork], ["after_worker_fork", 0], ["after_worker_fork", 1], %w[on_restart],
                  %w[before_fork], ["after_worker_fork", 0], ["after_worker_fork", 1]], in_master

    (old + new).each do |pid|
      index = (old.index(pid) || new.index(pid))
      mine = lines.select { |_, _, p| p == pid }
      assert_equal [["before_worker_boot", [index], pid, master], ["before_worker_shutdown", [index], pid, master]], mine
    end
    names = lines.map { |name, args, pid| [name, args, pid] }
    restart = names.index(["on_restart", [], master])
    old.each { |pid| assert_operator names.index { |_, _, p| p == pid }, :<, restart, "old worker booted after on_restart" }
    old.each { |pid| assert_operator names.rindex { |_, _, p| p == pid }, :>, restart, "old worker stopped before on_restart" }
    new.each { |pid| assert_operator names.index { |_, _, p| p == pid }, :>, restart }
  end

  def test_single_mode_runs_on_restart_before_its_re_exec
    @hooks_file = File.join(@dir, "hooks")
    server = start_up("-w", "1", env: { "UP_TEST_HOOKS" => @hooks_file }, command: SERVER)
    server.signal(:USR2)
    server.wait_for(/listening on.*\n(?:.*\n)*.*listening on/)
    assert_equal [["on_restart", [], server.pid]], hook_lines.map { |name, args, pid| [name, args, pid] }
  end
end
