# frozen_string_literal: true

require "securerandom"
require "tmpdir"
require "fileutils"
require_relative "apps"
require_relative "redis_wire"
require_relative "server_process"
require_relative "setup"

module Bench
  # What the apps of a run need around them, made once before the first table and stopped
  # after the last: a redis-server on a free loopback port holding foo = "bar" (json_api),
  # examples/rails' production database, made by `rails db:prepare` from its migrations and
  # seeds in a temporary directory (rails), its public/assets made by `rails assets:precompile`
  # (the Rails asset tables), and the files of the static tables. Created by bench/run; owns the
  # Redis process and the directory. #env_for(app) is what every server of that app's table gets in its
  # environment; #unavailable says why an app cannot run when its service could not be made;
  # #redis_get_calls counts the GETs Redis has served, for json_api's check of the servers.
  class AppServices
    RAILS_DIR = "examples/rails"
    PREPARE_TIMEOUT = 120
    PRECOMPILE_TIMEOUT = 300

    attr_reader :unavailable

    def initialize(root:, apps:, results_dir:)
      @root = root
      @apps = apps.map { |name| Apps.fetch(name) }
      @results_dir = results_dir
      @unavailable = {}
      @env = Hash.new { |h, k| h[k] = {} }
      @dir = nil
      @redis = nil
      @rails_env = nil
    end

    def start
      @dir = Dir.mktmpdir("up-bench-services-")
      @apps.each do |app|
        start_redis(app) if app.needs?(:redis)
        prepare_rails(app) if app.needs?(:rails)
        precompile_assets(app) if app.needs?(:rails_assets) && !@unavailable.key?(app.name)
        write_static_files if app.needs?(:static_files)
      end
      self
    end

    def stop
      @redis&.stop
      FileUtils.rm_rf(@dir) if @dir
    end

    def env_for(app)
      @env[app]
    end

    # GET calls the run's Redis has served so far (INFO commandstats), or nil when the run has
    # no Redis or it does not answer. Bench::Runner reads it around each measured run of
    # json_api's servers: every other server of the table is idle then, so the difference is
    # the measured server's.
    def redis_get_calls
      @redis && RedisWire.get_calls(@redis.port)
    rescue SystemCallError, IOError, ArgumentError
      nil
    end

    # Bundler settings for the app's own bundle (rails), or nil when it runs with the server's.
    def self.bundle_env(root, app)
      return nil unless Apps.fetch(app).needs?(:rails)

      # The optional bench group holds Puma, which only this table needs; OPAL_UP_PATH: UP!
      # from this checkout, as the app's Gemfile.lock records it.
      { "BUNDLE_GEMFILE" => File.join(root, RAILS_DIR, "Gemfile"), "BUNDLE_WITH" => "bench", "OPAL_UP_PATH" => "../.." }
    end

    private

    def start_redis(app)
      @redis ||= begin
        port = ServerProcess.free_port
        redis = ServerProcess.new(argv: ["redis-server", "--port", port.to_s, "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--dir", @dir],
                                  env: {}, chdir: @dir, port: port, log_path: File.join(@results_dir, "redis.log"))
        redis.start
        set_foo(port)
        redis
      end
      @env[app.name]["REDIS_URL"] = "redis://127.0.0.1:#{@redis.port}"
    rescue ServerProcess::StartError, SystemCallError, IOError => e
      @unavailable[app.name] = "failed to start: redis-server: #{e.message}"
    end

    # The value every json_api server must answer (Apps::JSON_DOCUMENT).
    def set_foo(port)
      reply = RedisWire.command(port, "SET", "foo", "bar")
      raise IOError, "SET foo bar answered #{reply.inspect}" unless reply == "OK"
    end

    # The static tables' files (Apps::STATIC_FILES), written afresh each run.
    def write_static_files
      FileUtils.mkdir_p(Apps::STATIC_DIR)
      Apps::STATIC_FILES.each do |name, size|
        File.write(File.join(Apps::STATIC_DIR, name), Apps.static_bytes(size))
      end
    end

    # The app's stylesheet and script fingerprinted into examples/rails/public/assets, as
    # bin/setup --test makes them (and as a deploy does); the task skips what is up to date.
    def precompile_assets(app)
      env = Setup.clean_env.merge("RAILS_ENV" => "production", "SECRET_KEY_BASE_DUMMY" => "1")
                 .merge(self.class.bundle_env(@root, app.name))
      log = File.join(@results_dir, "rails-assets-precompile.log")
      pid = Process.spawn(env, "bundle", "exec", "rails", "assets:precompile",
                          chdir: File.join(@root, RAILS_DIR), in: File::NULL, out: log, err: log)
      status = ServerProcess.wait_child(pid, PRECOMPILE_TIMEOUT)
      ServerProcess.kill_child(pid) unless status
      return if status&.success?

      @unavailable[app.name] = "failed to start: rails assets:precompile failed (see #{log.delete_prefix("#{@root}/")})"
    end

    # Made once for all the apps that need it (rails, rails_css, rails_js).
    def prepare_rails(app)
      return @env[app.name].merge!(@rails_env) if @rails_env

      env = {
        "RAILS_ENV" => "production", "RACK_ENV" => "production",
        "SECRET_KEY_BASE" => SecureRandom.hex(64),
        "DATABASE_URL" => "sqlite3:#{File.join(@dir, "production.sqlite3")}"
      }.merge(self.class.bundle_env(@root, app.name))
      log = File.join(@results_dir, "rails-db-prepare.log")
      pid = Process.spawn(Setup.clean_env.merge(env), "bundle", "exec", "rails", "db:prepare",
                          chdir: File.join(@root, RAILS_DIR), in: File::NULL, out: log, err: log)
      status = ServerProcess.wait_child(pid, PREPARE_TIMEOUT)
      ServerProcess.kill_child(pid) unless status
      unless status&.success?
        @unavailable[app.name] = "failed to start: rails db:prepare failed (see #{log.delete_prefix("#{@root}/")})"
        return
      end
      @rails_env = env
      @env[app.name].merge!(env)
    end
  end
end
