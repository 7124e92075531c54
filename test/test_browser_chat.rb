# frozen_string_literal: true

# examples/chat in a real browser, as its README line runs it (exe/up_ruby -w 2): headless
# Chromium (test/support/browser.rb) opens the page twice, the two WebSockets held by
# different workers; each page joins and says a line by typing and pressing Enter or clicking
# Send, and each shows the other's join, line and leave, read back from its DOM. A name and a
# line written in HTML stay text: no element, no script. Neither page logs an error (a
# Content-Security-Policy violation would be one). The server side alone:
# test_example_chat.rb.
require_relative "helper"
require_relative "support/browser"
require_relative "support/cli_process"
require_relative "support/stopped_worker"

class TestBrowserChat < Minitest::Test
  include StoppedWorker

  APP = "examples/chat/config.ru"
  # The log's lines as the page shows them.
  LOG = "[...document.querySelectorAll('#log li')].map((li) => li.textContent)"
  BOB = "<b>Bob</b>"
  XSS = %(<img src=x onerror="document.title='pwned'">)

  def time_limit_seconds
    30
  end

  def setup
    @server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", APP, wait: false) # teardown stops it
    port = @server.wait_for(%r{listening on http://127\.0\.0\.1:(\d+)})[1]
    @workers = Array.new(2) { |i| @server.wait_for(/worker #{i} booted \(pid (\d+)\)/)[1].to_i }
    @url = "http://127.0.0.1:#{port}/"
    @browser = Browser.open
  end

  def teardown
    @browser&.close
    @server&.stop
  end

  def test_pages_on_two_workers_see_each_others_joins_lines_and_leaves
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

  private

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

  # A page whose WebSocket another worker than busy holds: busy is stopped while the page
  # loads and connects (see StoppedWorker), and goes on once the page said which worker it
  # got. (Opening pages until one lands elsewhere would not do: an idle cluster gives them all
  # to one worker.)
  def page_on_another_worker(busy)
    with_worker_stopped(busy) { @browser.open_page(@url).tap { |page| worker(page) } }
  end
end
