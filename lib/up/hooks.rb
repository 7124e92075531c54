# frozen_string_literal: true

module Up
  # Blocks an app asks the server to run at points of its life, by name, in the order added
  # (apps reconnect databases and Redis in them after a fork). The config file fills one;
  # Up::Launcher takes it (an empty one by default) and hands it to the runners, which call
  # #run at these points:
  #
  #   before_fork                   master, once before it forks a generation of workers
  #   after_worker_fork(index)      master, right after forking one worker
  #   before_worker_boot(index)     worker, after the fork and before it loads the app or serves
  #   before_worker_shutdown(index) worker, after it stopped serving, before it exits
  #   before_refork(index)          worker chosen as the template (--refork-after), after it
  #                                 stopped serving and before it forks the next workers
  #   on_restart                    master (or the single process), before a USR2 re-exec
  #
  # It owns nothing but the blocks.
  class Hooks
    NAMES = %i[before_fork after_worker_fork before_worker_boot before_worker_shutdown before_refork
                on_restart].freeze

    def initialize
      @blocks = NAMES.to_h { |name| [name, []] }
    end

    # Raises ArgumentError for a name not in NAMES or a missing block.
    def add(name, &block)
      raise ArgumentError, "unknown hook #{name.inspect}; hooks are #{NAMES.join(", ")}" unless @blocks.key?(name)
      raise ArgumentError, "hook #{name} needs a block" unless block

      @blocks[name] << block
      self
    end

    # True when no block was added (up_node, which cannot run them, refuses any).
    def empty?
      @blocks.each_value.all?(&:empty?)
    end

    # Calls each block for name with args; what a block raises goes to the caller, which
    # logs it (Up::Runner#hook) and goes on.
    def run(name, *args)
      blocks = @blocks.fetch(name) { raise ArgumentError, "unknown hook #{name.inspect}" }
      blocks.each { |block| block.call(*args) }
      nil
    end
  end
end
