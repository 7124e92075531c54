# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "cli_process"

# Starts exe/up_node as a user does (CLIProcess: a child process, its "listening on" line
# awaited, never a fixed sleep) on a free loopback port. The compiled bundles go to a cache
# directory of this test run (XDG_CACHE_HOME), so the first start of an app compiles it and
# later ones reuse it; a test that needs a cold start passes its own.
module UpNodeProcess
  EXE = File.join(CLIProcess::ROOT, "exe", "up_node")
  CACHE = Dir.mktmpdir("up-node-cache")
  Minitest.after_run { FileUtils.rm_rf(CACHE) }

  FEATURES = "test/rackup/features.ru"

  # args: up_node's options and config.ru (one worker and test/rackup/features.ru unless
  # given); env: more variables for it. Returns the CLIProcess; @port is its port. Stopped
  # in teardown, or by stop_up_nodes; so is one that never printed its listening line.
  def start_up_node(*args, cache: CACHE, env: {}, wait: true)
    args = ["-w", "1", *args] unless args.include?("-w")
    args << FEATURES unless args.last&.end_with?(".ru")
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", *args, command: [RbConfig.ruby, EXE],
                            env: { "XDG_CACHE_HOME" => cache }.merge(env), wait: false)
    (@up_node_processes ||= []) << server
    @port = wait ? server.wait_listening(timeout: start_limit_seconds) : server.port
    server
  end

  # How long a start may take to listen (or to fail): a guard against a hang, longer where a
  # test compiles apps from an empty cache on a machine that may be busy.
  def start_limit_seconds
    30
  end

  # Stops every up_node this test started, before a directory it writes to goes away.
  def stop_up_nodes
    (@up_node_processes || []).each(&:stop)
    @up_node_processes = []
  end

  # Runs up_node to its end (a start that fails); returns [Process::Status, output].
  def run_up_node(*args, cache: CACHE)
    server = start_up_node(*args, cache: cache, wait: false)
    [server.wait(timeout: start_limit_seconds), server.output]
  end

  def teardown
    close_sockets
    stop_up_nodes
    super
  end
end
