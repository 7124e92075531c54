# frozen_string_literal: true

require "open3"
require "rbconfig"
require_relative "setup"

module Bench
  # What `exe/up_ruby` does when it is given no -t: the thread count its CLI defaults to, so
  # that the "default settings" rows say which mode they measured and stay true when the
  # default changes. Asked once per run (memoized) from the current sources, or from another
  # checkout (the --baseline worktree), in a child ruby, so that bench/ never loads UP!'s code
  # into its own process. Used by Bench::Peers and Bench::Baseline.
  module UpDefaults
    ROOT = File.expand_path("../../..", __dir__)

    # Where the default lives today; the help text is the fallback if that constant moves.
    CONSTANT_SCRIPT = 'require "up/cli"; print Integer(Up::CLI::DEFAULTS.fetch(:threads))'
    HELP_PATTERN = /--threads N\s+.*?\((\d+)\)/

    # The default thread count of the checkout at root as an Integer, or nil when neither the
    # constant nor `up_ruby --help` gives one (the label then says "no -t" without a number).
    def self.threads(root = ROOT)
      @threads ||= {}
      return @threads[root] if @threads.key?(root)

      @threads[root] = from_constant(root) || from_help(root)
    end

    # "-t 5" for the labels, or "no -t" when the default could not be found.
    def self.threads_flag(root = ROOT)
      count = threads(root)
      count ? "-t #{count}" : "no -t"
    end

    def self.from_constant(root)
      out, status = capture(root, RbConfig.ruby, "-I", File.join(root, "lib"), "-e", CONSTANT_SCRIPT)
      status && Integer(out, exception: false)
    end

    def self.from_help(root)
      out, status = capture(root, RbConfig.ruby, File.join(root, "exe", "up_ruby"), "--help")
      status && out[HELP_PATTERN, 1]&.to_i
    end

    # [stdout, success?]; a command that cannot run is just a failure.
    def self.capture(root, *argv)
      out, _err, status = Open3.capture3(Setup.clean_env, *argv, chdir: root)
      [out.strip, status.success?]
    rescue SystemCallError
      [nil, false]
    end
    private_class_method :from_constant, :from_help, :capture
  end
end
