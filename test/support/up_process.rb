# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "tmpdir"
require_relative "cli_process"

# Starts exe/up as a user does (CLIProcess: a child process, its "listening on" line awaited,
# never a fixed sleep) on a free loopback port, with one worker and
# test/rackup/features.ru unless told otherwise. Compiled bundles go to a cache of this test
# run, as UpNodeProcess does it.
module UpProcess
  EXE = File.join(CLIProcess::ROOT, "exe", "up")
  CACHE = Dir.mktmpdir("up-cache")
  Minitest.after_run { FileUtils.rm_rf(CACHE) }

  FEATURES = "test/rackup/features.ru"

  # Returns the CLIProcess; @port is its port. Stopped in teardown.
  def start_up(*args, wait: true)
    args = ["-w", "1", *args] unless args.include?("-w")
    args << FEATURES unless args.last&.end_with?(".ru")
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", *args, command: [RbConfig.ruby, EXE],
                            env: { "XDG_CACHE_HOME" => CACHE }, wait: wait)
    (@up_processes ||= []) << server
    @port = server.port
    server
  end

  def teardown
    close_sockets
    (@up_processes || []).each(&:stop)
    super
  end
end
