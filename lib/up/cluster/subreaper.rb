# frozen_string_literal: true

require "fiddle"
require_relative "../runner"

module Up
  class Cluster < Runner
    # Linux's child subreaper flag (prctl PR_SET_CHILD_SUBREAPER) for the master of
    # --refork-after: a worker forked by the template is orphaned at once (the template forks
    # twice and the middle process exits), and the kernel hands an orphan to its nearest
    # subreaper ancestor instead of init, so every worker is the master's child to wait for,
    # whoever forked it. Called through Fiddle: one libc call is not worth a C function.
    module Subreaper
      PR_SET_CHILD_SUBREAPER = 36

      # True once set; false where there is no prctl (not Linux).
      def self.enable
        return false unless RUBY_PLATFORM.include?("linux")

        prctl = Fiddle::Function.new(Fiddle::Handle::DEFAULT["prctl"], [Fiddle::TYPE_INT] + [Fiddle::TYPE_LONG] * 4,
                                     Fiddle::TYPE_INT)
        prctl.call(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0).zero?
      rescue Fiddle::DLError
        false
      end
    end
  end
end
