# frozen_string_literal: true

# examples/chat in a real browser, as a user runs it (exe/up_ruby -w 2), and the same
# command on the other runtimes (exe/up_node, exe/up): one test per runtime, the same steps.
# Headless Chromium (test/support/browser.rb) opens the page twice, the two WebSockets held by
# different workers; each page joins and says a line by typing and pressing Enter or clicking
# Send, and each shows the other's join, line and leave, read back from its DOM: a line
# published on one worker reaches the member on the other. A name and a line written in HTML
# stay text: no element, no script. The page comes with the app's Content-Security-Policy,
# and neither page logs an error (a violation of it would be one). The server side alone:
# test_example_chat.rb.
require_relative "helper"
require_relative "support/browser"
require_relative "support/runtime_process"
require_relative "support/stopped_worker"

class TestBrowserChat < Minitest::Test
  include HTTPClient
  include StoppedWorker

  APP = "examples/chat/config.ru"
  # The log's lines as the page shows them.
  LOG = "[...document.querySelectorAll('#log li')].map((li) => li.textContent)"
  BOB = "<b>Bob</b>"
  XSS = %(<img src=x onerror="document.title='pwned'">)
  # Pages opened at most to get one whose WebSocket up_node's primary gives the other worker.
  TRIES = 10

  # A cold Opal build of the chat on a busy machine, then the browser.
  def time_limit_seconds
    60
  end

  # Starts the chat on runtime with -w 2 and waits for both workers (up_ruby logs
  # "worker 0 booted (pid P)", up_node and up "worker 0 (pid P) booted").
  def serve(runtime)
    @runtime = runtime
    @server = RuntimeProcess.spawn(runtime, APP, "-w", "2") # teardown stops it
    @port = @server.wait_for(%r{listening on http://127\.0\.0\.1:(\d+)}, timeout: 45)[1].to_i
    @workers = Array.new(2) do |i|
      @server.wait_for(/worker #{i} (?:booted \(pid (\d+)\)|\(pid (\d+)\) booted)/).captures.compact.first.to_i
    end
    @url = "http://127.0.0.1:#{@port}/"
    @browser = Browser.open
  end

  def teardown
    close_sockets
    @browser&.close
    @server&.stop
  end

  Conformance::RUNTIMES.each_key do |runtime|
    define_method("test_pages_on_two_workers_see_each_others_joins_lines_and_leaves_on_#{runtime}") do
      serve(runtime)
      assert_match(/\Adefault-src 'self';/, get("/")["content-security-policy"], "the app's page, with its policy")
      pages_on_two_workers_see_each_others_joins_lines_and_leaves
    end
  end

  private

  def pages_on_two_workers_see_each_others_joins_lines_and_leaves
    ada = @browser.open_page(@url)
    ada_worker = worker(ada)
    bob = page_on_another_worker(ada_worker)
    assert_equal @workers.sort, [ada_worker, worker(bob)].sort, "one page on each worker"

    join(ada, "Ada")
    assert_equal ["Ada joined"], log(ada, 1)
    assert_equal [false, "Connected to worker #{ada_worker} as Ada"],
                 ada.evaluate("[document.getElementById('join').checkVisibility(), " \
                              "document.getElementById('status').textContent]"),
                 "the message form took the name form's place"
    join(bob, BOB)
    assert_equal ["#{BOB} joined"], log(bob, 1)
    assert_equal ["Ada joined", "#{BOB} joined"], log(ada, 2)

    ada.type("#text", "Hello from worker #{ada_worker}")
    ada.press_enter
    assert_equal ["#{BOB} joined", "Ada: Hello from worker #{ada_worker}"], log(bob, 2)
    bob.type("#text", XSS)
    bob.click("#say button")
    said = ["Ada: Hello from worker #{ada_worker}", "#{BOB}: #{XSS}"]
    assert_equal ["#{BOB} joined", *said], log(bob, 3)
    assert_equal ["Ada joined", "#{BOB} joined", *said], log(ada, 4)

    [ada, bob].each do |page|
      assert_equal [0, "UP! chat"],
                   page.evaluate("[document.querySelectorAll('#log :not(li, span)').length, document.title]"),
                   "names and lines are text, never markup"
      assert_empty page.errors
    end

    bob.close
    assert_equal "#{BOB} left", log(ada, 5).last
    assert_empty ada.errors
  end

  # The pid of the worker that holds page's WebSocket, once the server said it.
  def worker(page)
    page.wait_until("document.body.dataset.worker").to_i
  end

  # The page's log once it has at least n lines.
  def log(page, n)
    page.wait_until("#{LOG}.length >= #{n} && #{LOG}")
  end

  # Joins as name, and waits for the server's welcome: the message form shows.
  def join(page, name)
    page.type("#name", name)
    page.press_enter
    page.wait_until("document.getElementById('say').checkVisibility()")
  end

  # A page whose WebSocket another worker than busy holds. The engine's workers (up_ruby, up)
  # share the listening socket, and an idle cluster gives every connection to the same one:
  # busy is stopped while the page loads and connects (see StoppedWorker), and goes on once
  # the page said which worker it got. up_node's primary deals connections to its workers
  # in turn, and would hand one to a stopped worker all the same: there pages are opened
  # until one lands on the other worker, the others closed.
  def page_on_another_worker(busy)
    return with_worker_stopped(busy) { @browser.open_page(@url).tap { |page| worker(page) } } unless @runtime == "up_node"

    TRIES.times do
      page = @browser.open_page(@url)
      return page unless worker(page) == busy

      page.close
    end
    flunk "#{TRIES} pages, all on worker #{busy}"
  end
end
