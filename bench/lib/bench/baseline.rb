# frozen_string_literal: true

require "fileutils"
require "open3"
require "tmpdir"
require_relative "peer"
require_relative "peers"
require_relative "server_process"
require_relative "setup"
require_relative "up_defaults"

module Bench
  # UP! at another git revision (--baseline REV), run as one more row of every table with
  # the same settings as the default row, so that one table holds before and after (a change
  # must be no lower than before it, in the same run). Checks REV out into a temporary
  # `git worktree`, builds its extension there with `bundle exec rake compile` and the main
  # Gemfile, and hands out the row's Peer. Created by bench/run before the first table; owns
  # the worktree until #remove, which bench/run calls whatever happens.
  class Baseline
    # A REV git cannot resolve: the run stops before measuring anything.
    class Error < StandardError; end

    KEY = "up_baseline"
    # A clean build of the extension takes about a minute on 2 cores.
    BUILD_TIMEOUT = 600

    attr_reader :rev, :sha, :short, :dir, :unavailable

    def initialize(root:, rev:, log_path:)
      @root = root
      @rev = rev
      @log_path = log_path
      @unavailable = {}
      @parent = nil
      @dir = nil
      @sha, ok = git("rev-parse", "--verify", "--quiet", "#{rev}^{commit}")
      raise Error, "--baseline #{rev}: not a commit in #{root}" unless ok

      @short, = git("rev-parse", "--short", @sha)
    end

    # Checks the revision out and builds it. On failure the row stays in the tables with the
    # reason (#unavailable, by peer key), as a peer that could not be installed does.
    def prepare
      @parent = Dir.mktmpdir("up-bench-baseline-")
      @dir = File.join(@parent, "up")
      return fail_with("git worktree add failed (see #{log_name})") unless logged(@root, {}, "git", "worktree",
                                                                                   "add", "--detach", @dir, @sha)

      env = { "BUNDLE_GEMFILE" => File.join(@root, "Gemfile") }
      return if logged(@dir, env, "bundle", "exec", "rake", "compile")

      fail_with("bundle exec rake compile failed in its worktree (see #{log_name})")
    end

    # The row: the same command as UP!'s default row, from the worktree's exe/up_ruby (which
    # puts the worktree's lib first on the load path, ahead of the main Gemfile's gemspec).
    def peer
      dir = @dir
      threads = UpDefaults.threads_flag(dir)
      Peer.new(key: KEY, group: "up", name: "UP! @#{@short}", runtime: :up,
               note: "commit #{@short} (`--baseline #{@rev}`), built in a git worktree",
               placeholders: { dir => "$BASELINE" },
               mode: ->(w) { "#{Peers.workers(w)}, default (`#{threads}`)" }) do |c|
        %W[bundle exec ruby #{dir}/exe/up_ruby -b 127.0.0.1 -p #{c.port} -w #{c.workers} #{c.app}] + c.up_args.to_a
      end
    end

    # Removes the worktree and its directory; safe to call twice or after a failed #prepare.
    def remove
      return unless @parent

      logged(@root, {}, "git", "worktree", "remove", "--force", @dir) if File.directory?(@dir)
      FileUtils.rm_rf(@parent)
      logged(@root, {}, "git", "worktree", "prune")
      @parent = nil
    end

    private

    def fail_with(reason)
      @unavailable[KEY] = "failed to start: #{reason}"
    end

    def log_name
      @log_path.delete_prefix("#{@root}/")
    end

    # [stdout stripped, success?] of a git command in the main work tree.
    def git(*args)
      out, _err, status = Open3.capture3("git", *args, chdir: @root)
      [out.strip, status.success?]
    end

    # Runs a command with its output appended to the log; true on success.
    def logged(chdir, env, *argv)
      File.open(@log_path, "a") do |log|
        log.puts "$ (cd #{chdir}) #{env.map { |k, v| "#{k}=#{v} " }.join}#{argv.join(" ")}"
        log.flush
        pid = Process.spawn(Setup.clean_env.merge(env), *argv, chdir: chdir, in: File::NULL, out: log, err: log)
        status = ServerProcess.wait_child(pid, BUILD_TIMEOUT)
        ServerProcess.kill_child(pid, :TERM) unless status
        log.puts "(exit #{status&.exitstatus.inspect})"
        status&.success? || false
      end
    rescue SystemCallError => e
      File.write(@log_path, "#{argv.first}: #{e.message}\n", mode: "a")
      false
    end
  end
end
