# frozen_string_literal: true

require "rbconfig"

module Up
  # Loads the engine's MRI extension, lib/up/up_ext, which `gem install` (or Bundler, for a
  # git source) builds from ext/up/extconf.rb. A checkout used as a path gem has none until it
  # is built, and a LoadError's backtrace would not say so: the process that loads UP! (our
  # executables, rackup, rails) stops with one line that names the command that builds it.
  module NativeExtension
    ROOT = File.expand_path("../..", __dir__)
    PATH = File.join(__dir__, "up_ext.#{RbConfig::CONFIG["DLEXT"]}")

    def self.load
      require_relative "up_ext"
    rescue LoadError => e
      abort "#{File.basename($PROGRAM_NAME)}: #{problem(e)}: #{build_command}"
    end

    def self.problem(error)
      return "UP!'s native extension is not built (#{PATH})" unless File.exist?(PATH)

      "UP!'s native extension (#{PATH}) does not load (#{error.message.lines.first.strip})"
    end

    # A checkout builds with its Rakefile (plain rake: it needs no gem); an installed gem is
    # rebuilt by RubyGems or Bundler.
    def self.build_command
      return %(build it with "cd #{ROOT} && rake compile") if File.file?(File.join(ROOT, "Rakefile"))

      %(rebuild it with "#{ENV["BUNDLE_GEMFILE"] ? "bundle" : "gem"} pristine opal-up")
    end
    private_class_method :problem, :build_command
  end
end

Up::NativeExtension.load
