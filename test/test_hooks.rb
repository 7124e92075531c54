# frozen_string_literal: true

# Up::Hooks: blocks run by name, in the order added.
require_relative "helper"
require "up/hooks"

class TestHooks < Minitest::Test
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
end
