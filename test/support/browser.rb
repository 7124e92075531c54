# frozen_string_literal: true

require "fileutils"
require "io/nonblock"
require "io/wait"
require "json"
require "tmpdir"
require_relative "browser_page"

# Headless Chromium for browser tests: Debian's chromium (bin/setup --test installs it), driven
# over the Chrome DevTools Protocol on a pipe (--remote-debugging-pipe: JSON messages ended by
# a NUL byte, commands on the child's fd 3, replies and events on its fd 4). No port to find,
# no WebSocket to the browser and no npm client to keep in step with the browser's version:
# the few commands a test needs are plain JSON.
#
# Created by a test with Browser.open (a block closes it); owns the browser process group and
# a temporary profile directory, and hands out BrowserPage objects (open_page). Every command
# and every wait has a deadline; past it, Browser::Error says what was waited for and ends
# with the browser's own log. close kills the whole process group (the browser and its
# renderers) and always runs, whatever the test did; and should the test process itself die,
# the browser reads the end of its pipe and quits.
class Browser
  EXE = "/usr/bin/chromium"

  # Chromium refuses to start as root with its sandbox on (the test runs as root in CI), so
  # --no-sandbox; the pages it loads are the test's own, from 127.0.0.1. The rest keeps a test
  # browser quiet and quick: no first-run UI, no background network or component updates,
  # and no throttling of timers in pages that are not in front (a test drives several).
  FLAGS = %w[
    --headless --no-sandbox --remote-debugging-pipe --no-first-run --no-default-browser-check
    --disable-gpu --disable-extensions --disable-background-networking --disable-component-update
    --disable-sync --disable-default-apps --mute-audio --disable-background-timer-throttling
    --disable-renderer-backgrounding --disable-backgrounding-occluded-windows
  ].freeze
  # A cold start on a loaded 2-core machine (the first command waits for the launch).
  LAUNCH_TIMEOUT = 30
  # How long close lets the browser quit by itself before it kills it.
  QUIT_TIMEOUT = 5

  class Error < StandardError; end

  attr_reader :pid

  # Yields a browser and closes it after the block, or returns it (then the caller closes it).
  def self.open(**options)
    browser = new(**options)
    return browser unless block_given?

    begin
      yield browser
    ensure
      browser.close
    end
  end

  # timeout: the default deadline of one command, in seconds; flags: more of Chromium's
  # switches, after FLAGS (a test's certificate to trust, say).
  def initialize(timeout: 10, flags: [])
    @timeout = timeout
    @flags = flags
    @dir = Dir.mktmpdir("up-chromium")
    @log_path = File.join(@dir, "chromium.log")
    @buffer = +"".b
    @replies = {}
    @events = Hash.new { |h, k| h[k] = [] }
    @next_id = 0
    launch
    command("Browser.getVersion", timeout: LAUNCH_TIMEOUT)
  rescue StandardError
    close
    raise
  end

  # A new page at url, loaded (its load event fired), in a browser context of its own: its
  # own cookies, cache and connections, as a second visitor on another machine would have
  # (pages of one context would share keep-alive connections, and so the server's workers).
  def open_page(url, timeout: @timeout)
    context = command("Target.createBrowserContext")["browserContextId"]
    target = command("Target.createTarget", { url: "about:blank", browserContextId: context })["targetId"]
    session = command("Target.attachToTarget", { targetId: target, flatten: true })["sessionId"]
    page = BrowserPage.new(self, context, target, session)
    %w[Page.enable Runtime.enable Log.enable].each { |m| command(m, session: session) }
    command("Page.setLifecycleEventsEnabled", { enabled: true }, session: session)
    page.goto(url, timeout: timeout)
    page
  end

  # Sends a DevTools command (to a page when session is given) and returns its result.
  def command(method, params = {}, session: nil, timeout: @timeout)
    raise Error, "the browser is closed" unless @commands

    id = (@next_id += 1)
    message = { id: id, method: method, params: params }
    message[:sessionId] = session if session
    @commands.write(JSON.generate(message), "\0")
    deadline = now + timeout
    read_message(deadline, "a reply to #{method}") until @replies.key?(id)
    reply = @replies.delete(id)
    raise Error, "#{method}: #{reply["error"]["message"]}" if reply["error"]

    reply["result"]
  end

  # Waits for the event named method on session (nil: the browser's) whose params the block
  # accepts (any, without a block); removes it from those kept and returns its params.
  def wait_for_event(method, session: nil, timeout: @timeout)
    deadline = now + timeout
    loop do
      events = @events[session]
      i = events.index { |e| e["method"] == method && (!block_given? || yield(e["params"])) }
      return events.delete_at(i)["params"] if i

      read_message(deadline, "the event #{method}")
    end
  end

  # The events kept for session so far (read as commands and waits go by).
  def events(session)
    @events[session]
  end

  # Asks the browser to quit (it then reaps its own renderers), waits a bounded time for it to
  # go, then kills its whole process group whatever happened, and removes its profile. Safe
  # to call twice.
  def close
    if @pid
      quit
      begin
        Process.kill(:KILL, -@pid)
      rescue Errno::ESRCH
        nil
      end
      Process.wait(@pid)
      @pid = nil
    end
    [@commands, @replies_io].each { |io| io&.close }
    @commands = @replies_io = nil
    FileUtils.remove_entry(@dir) if @dir && Dir.exist?(@dir)
  end

  private

  # Browser.close, then the end of its pipe (the browser exited), within QUIT_TIMEOUT.
  def quit
    return unless @commands && @replies_io

    command("Browser.close", timeout: QUIT_TIMEOUT)
    deadline = now + QUIT_TIMEOUT
    loop { read_message(deadline, "the browser to quit") }
  rescue Error, IOError, SystemCallError
    nil
  end

  def launch
    commands_in, @commands = IO.pipe
    @replies_io, replies_out = IO.pipe
    # Ruby makes its pipes non-blocking; the browser's ends must block, or Chromium takes the
    # first EAGAIN for the end of the connection and exits.
    [commands_in, replies_out].each { |io| io.nonblock = false }
    profile = File.join(@dir, "profile")
    # pgroup: the browser leads a process group of its own, so close reaches its renderers.
    @pid = Process.spawn(EXE, *FLAGS, *@flags, "--user-data-dir=#{profile}", "about:blank",
                         3 => commands_in, 4 => replies_out, in: File::NULL, %i[out err] => [@log_path, "w"],
                         pgroup: true)
  rescue Errno::ENOENT
    raise Error, "no #{EXE}: bin/setup --test installs Debian's chromium"
  ensure
    commands_in&.close
    replies_out&.close
  end

  # Reads one whole message: a reply is kept by its id, an event by its session.
  def read_message(deadline, what)
    until (nul = @buffer.index("\0"))
      left = deadline - now
      raise Error, "timed out waiting for #{what}#{log_tail}" if left <= 0
      next unless @replies_io.wait_readable(left)

      chunk = @replies_io.read_nonblock(65_536, exception: false)
      raise Error, "the browser exited while waiting for #{what}#{log_tail}" if chunk.nil?

      @buffer << chunk unless chunk == :wait_readable
    end
    message = JSON.parse(@buffer.slice!(0, nul + 1).chop.force_encoding(Encoding::UTF_8))
    if message.key?("id")
      @replies[message["id"]] = message
    else
      @events[message["sessionId"]] << message
    end
  end

  # The end of the browser's log, without its complaints that there is no D-Bus (there is
  # none in a container or CI, and the browser needs none).
  def log_tail
    lines = File.exist?(@log_path) ? File.readlines(@log_path).grep_v(/dbus/) : []
    text = lines.last(20).join
    text.empty? ? "" : "; the browser's log ends:\n#{text}"
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end
