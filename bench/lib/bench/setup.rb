# frozen_string_literal: true

require_relative "apps"
require_relative "server_process"

module Bench
  # Installs and builds what a run needs, and finds out what could not be: wrk and nginx from
  # Debian, the peers from bench/Gemfile, the npm packages of bench/package.json (node_ws), the
  # WebSocket load client (bench/ws_load) and UP! itself through bin/setup. Created by
  # bench/run before any measurement; writes every command's output to one log file.
  # #unavailable then maps a peer key to the reason it cannot run, for the tables.
  class Setup
    # Without wrk (or ws_load, for the WebSocket apps) there is nothing to measure with.
    class Fatal < StandardError; end

    APT_PACKAGES = { "wrk" => "wrk", "nginx" => "nginx-light", "h2o" => "h2o", "redis-server" => "redis-server" }.freeze
    SBIN = %w[/usr/sbin /sbin /usr/local/sbin].freeze

    attr_reader :unavailable, :bundle_without

    # wrk: false for the scenarios that bring their own client (bench/slow_reader and others).
    # apps: the names of the apps to measure (json_api needs redis-server, rails its bundle).
    def initialize(root:, peers:, log_path:, install:, build:, apps: [], wrk: true, out: $stdout)
      @root = root
      @apps = apps
      @wrk = wrk
      @peers = peers
      @log_path = log_path
      @install = install
      @build = build
      @out = out
      @unavailable = {}
      @bundle_without = []
    end

    # The environment for `bundle` with bench/Gemfile (BUNDLE_WITHOUT lists peers that failed).
    def bench_bundle_env
      env = { "BUNDLE_GEMFILE" => File.join(@root, "bench", "Gemfile") }
      env["BUNDLE_WITHOUT"] = @bundle_without.join(":") unless @bundle_without.empty?
      env
    end

    def run
      File.write(@log_path, "")
      system_packages
      ws_load_build if @apps.any? { |app| Apps.fetch(app).ws? }
      npm_packages if @peers.any? { |p| p.key == "node_ws" }
      bench_bundle if @peers.any? { |p| p.runtime == :peer }
      up_build if @peers.any? { |p| p.runtime == :up }
      rails_bundle if @apps.any? { |app| Apps.fetch(app).needs?(:rails) }
      self
    end

    # Unsets what a surrounding `bundle exec` or the caller's shell would leak into children
    # (Bundler settings, RUBYOPT, RUBYLIB); merged under every child's own environment.
    def self.clean_env
      ENV.keys.grep(/\A(BUNDLE_|BUNDLER_|RUBYOPT\z|RUBYLIB\z|RACK_ENV\z)/).to_h { |k| [k, nil] }
    end

    # Full path of an executable on PATH (or in an sbin directory), or nil.
    def self.which(name)
      (ENV.fetch("PATH", "").split(File::PATH_SEPARATOR) + SBIN).each do |dir|
        path = File.join(dir, name)
        return path if File.file?(path) && File.executable?(path)
      end
      nil
    end

    private

    def system_packages
      missing = needed_commands.reject { |cmd| self.class.which(cmd) }
      return if missing.empty?

      packages = missing.map { |cmd| APT_PACKAGES[cmd] }
      reason = apt_install(packages)
      missing.each do |cmd|
        next if self.class.which(cmd)
        raise Fatal, "wrk is missing and could not be installed: #{reason}" if cmd == "wrk"
        # Without redis-server, AppServices fails json_api's rows with the reason.
        next if cmd == "redis-server"

        @unavailable[cmd] = "not installed: #{reason}"
      end
    end

    # The Debian commands this run uses: nginx (both its rows: group nginx) and h2o are rows of
    # their own.
    def needed_commands
      commands = []
      commands << "wrk" if @wrk && (@apps.empty? || @apps.any? { |app| !Apps.fetch(app).ws? })
      commands.concat(%w[nginx h2o].select { |cmd| @peers.any? { |p| p.group == cmd } })
      commands << "redis-server" if @apps.include?("json_api")
      commands
    end

    # examples/rails' bundle with its optional bench group (Puma for the rails table). When it
    # cannot be installed, `rails db:prepare` fails next and Bench::AppServices says so.
    def rails_bundle
      env = { "BUNDLE_GEMFILE" => File.join(@root, "examples", "rails", "Gemfile"), "BUNDLE_WITH" => "bench" }
      return if logged(env, %w[bundle check]) || !@install

      say "installing examples/rails' bundle with its bench group"
      logged(env, %w[bundle install]) or say "examples/rails' bundle install failed: #{last_error_line}"
    end

    # Returns nil on success, else why not.
    def apt_install(packages)
      return "--no-install given (apt-get install #{packages.join(" ")})" unless @install
      return "not root (apt-get install #{packages.join(" ")})" unless Process.uid.zero?
      return "apt-get not found" unless self.class.which("apt-get")

      env = { "DEBIAN_FRONTEND" => "noninteractive" }
      say "installing #{packages.join(" ")} with apt-get"
      cmd = %w[apt-get install -y -q] + packages
      return nil if logged(env, cmd)

      say "apt-get install failed; running apt-get update first"
      logged(env, %w[apt-get update -q]) or return "apt-get update failed (see #{@log_path})"
      logged(env, cmd) ? nil : "apt-get install #{packages.join(" ")} failed (see #{@log_path})"
    end

    # Installs bench/Gemfile. If that fails, installs each peer's group alone to find the
    # ones that fail, and leaves those out (BUNDLE_WITHOUT) so the others still run.
    def bench_bundle
      return if logged(bench_bundle_env, %w[bundle check])

      unless @install
        mark_peers("not installed: bench/Gemfile is not installed (--no-install given)")
        return
      end
      say "installing the peers: BUNDLE_GEMFILE=bench/Gemfile bundle install"
      return if logged(bench_bundle_env, %w[bundle install])

      groups = @peers.select { |p| p.runtime == :peer }.map(&:key)
      groups.each do |group|
        @bundle_without = groups - [group]
        next if logged(bench_bundle_env, %w[bundle install])

        @unavailable[group] = "not installed: bundle install failed: #{last_error_line}"
      end
      @bundle_without = groups.select { |g| @unavailable.key?(g) }
      return if logged(bench_bundle_env, %w[bundle install])

      mark_peers("not installed: bundle install failed: #{last_error_line}")
    end

    # bench/ws_load with its Makefile: the WebSocket apps cannot be measured without it.
    def ws_load_build
      say "building the WebSocket load client: make -C bench/ws_load"
      return if logged({}, %w[make -C bench/ws_load ws_load])

      raise Fatal, "bench/ws_load could not be built: #{last_error_line}"
    end

    # The ws package for node_ws, as bench/package-lock.json pins it, into bench/node_modules.
    def npm_packages
      return if File.exist?(File.join(@root, "bench", "node_modules", "ws", "package.json"))

      say "installing the npm packages of bench/package.json: npm ci --prefix bench" if @install
      reason = if !@install then "--no-install given (npm ci --prefix bench)"
               elsif !self.class.which("npm") then "npm not found"
               elsif !logged({}, %w[npm ci --prefix bench --no-audit --no-fund]) then "npm ci failed: #{last_error_line}"
               end
      @unavailable["node_ws"] = "not installed: #{reason}" if reason
    end

    def mark_peers(reason)
      @peers.each { |p| @unavailable[p.key] ||= reason if p.runtime == :peer }
    end

    def up_build
      return unless @build

      say "building UP!: bin/setup"
      return if logged({}, %w[bin/setup])

      reason = "failed to start: bin/setup failed: #{last_error_line}"
      @peers.each { |p| @unavailable[p.key] = reason if p.runtime == :up }
    end

    # Runs a command from the repo root with its output appended to the log. True on success.
    def logged(env, argv)
      File.open(@log_path, "a") do |log|
        log.puts "$ #{env.map { |k, v| "#{k}=#{v} " }.join}#{argv.join(" ")}"
        log.flush
        pid = Process.spawn(self.class.clean_env.merge(env), *argv, chdir: @root, in: File::NULL, out: log, err: log)
        _, status = Process.wait2(pid)
        pid = nil
        log.puts "(exit #{status.exitstatus.inspect})"
        status.success?
      ensure
        ServerProcess.kill_child(pid, :TERM) if pid
      end
    rescue SystemCallError => e
      File.write(@log_path, "#{argv.first}: #{e.message}\n", mode: "a")
      false
    end

    # The last line of the log that looks like an error, and where the whole log is, for a
    # table cell.
    def last_error_line
      lines = File.readlines(@log_path).map(&:strip).reject { |l| l.empty? || l.start_with?("(exit") }
      line = lines.reverse.find { |l| l.match?(/error|fail|could not|cannot|not found/i) } || lines.last
      "#{line.to_s[0, 160]} (see #{@log_path.delete_prefix("#{@root}/")})"
    end

    def say(message)
      @out.puts "bench: #{message}"
    end
  end
end
