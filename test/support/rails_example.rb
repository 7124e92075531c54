# frozen_string_literal: true

require "bundler"
require "securerandom"
require "tmpdir"
require "fileutils"
require_relative "cli_process"

# examples/rails for a test: in production with its own bundle (examples/rails/Gemfile, which
# bin/setup --test installs), a SECRET_KEY_BASE of its own and a database made by
# `rails db:prepare` in a temp dir that teardown_rails removes.
module RailsExample
  RAILS_DIR = File.expand_path("../../examples/rails", __dir__)

  def setup_rails
    @dir = Dir.mktmpdir("up-rails")
    @env = {
      "BUNDLE_GEMFILE" => File.join(RAILS_DIR, "Gemfile"),
      "OPAL_UP_PATH" => "../..", # UP! from this checkout, as Gemfile.lock records it
      "RAILS_ENV" => "production",
      "RACK_ENV" => "production",
      "SECRET_KEY_BASE" => SecureRandom.hex(64),
      "DATABASE_URL" => "sqlite3:#{File.join(@dir, "production.sqlite3")}"
    }
    prepare = in_rails_dir("rails", "db:prepare", wait: false)
    assert prepare.wait(timeout: 45).success?, "rails db:prepare failed:\n#{prepare.output}"
  end

  def teardown_rails
    FileUtils.rm_rf(@dir)
  end

  # `rails s -u up` on a free loopback port.
  def rails_s_up
    in_rails_dir("rails", "s", "-u", "up", "-p", "0", "-b", "127.0.0.1", "-P", File.join(@dir, "server.pid"))
  end

  # `bundle exec COMMAND` in examples/rails, with its Gemfile and none of the test's own
  # bundle (Bundler.with_original_env drops what `bundle exec rake` set, RUBYOPT included).
  def in_rails_dir(*command, wait: true)
    Bundler.with_original_env do
      CLIProcess.new("exec", *command, command: ["bundle"], env: @env, chdir: RAILS_DIR, wait: wait)
    end
  end
end
