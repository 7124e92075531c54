# frozen_string_literal: true

require "json"

# One tab of a Browser (test/support/browser.rb), made by Browser#open_page. A test acts on it
# as a user does, through the browser's own input events (click, type, press Enter), and reads
# the live DOM back (evaluate, wait_until). Every call has a deadline; errors (exceptions,
# console errors, refused loads and Content-Security-Policy violations) are kept for errors.
class BrowserPage
  attr_reader :context, :target, :session

  # How often wait_until checks its expression in the page.
  POLL_MS = 10
  # The page-side half, in JavaScript: an expression whose value has the functions.
  HELPERS = File.read(File.join(__dir__, "browser_page.js")).freeze

  def initialize(browser, context, target, session)
    @browser = browser
    @context = context
    @target = target
    @session = session
  end

  # Navigates and waits for this navigation's load event.
  def goto(url, timeout: 10)
    result = command("Page.navigate", { url: url }, timeout: timeout)
    raise Browser::Error, "#{url}: #{result["errorText"]}" if result["errorText"]

    @browser.wait_for_event("Page.lifecycleEvent", session: @session, timeout: timeout) do |params|
      params["loaderId"] == result["loaderId"] && params["name"] == "load"
    end
  end

  # The value of a JavaScript expression in the page (a promise is awaited), as JSON gives it.
  def evaluate(expression, timeout: 10)
    result = command("Runtime.evaluate", { expression: expression, returnByValue: true, awaitPromise: true },
                     timeout: timeout)
    if (details = result["exceptionDetails"])
      raise Browser::Error, details.dig("exception", "description") || details["text"]
    end

    result["result"]["value"]
  end

  # Waits in the page until expression is truthy and returns its value. Past the deadline it
  # raises with the page's text, to show what the page showed instead.
  def wait_until(expression, timeout: 10)
    evaluate("(#{HELPERS}).waitUntil(() => (#{expression}), #{(timeout * 1000).round}, #{POLL_MS}, " \
             "#{expression.to_json})", timeout: timeout + 5)
  end

  # A left click in the middle of the element selector finds.
  def click(selector)
    x, y = evaluate("(#{HELPERS}).centerOf(#{selector.to_json})")
    %w[mousePressed mouseReleased].each do |type|
      command("Input.dispatchMouseEvent", { type: type, x: x, y: y, button: "left", clickCount: 1 })
    end
  end

  # Clicks the field selector finds, then types text into it as one input.
  def type(selector, text)
    click(selector)
    command("Input.insertText", { text: text })
  end

  def press_enter
    key = { key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 }
    command("Input.dispatchKeyEvent", { type: "keyDown", text: "\r", **key })
    command("Input.dispatchKeyEvent", { type: "keyUp", **key })
  end

  # What went wrong in the page so far, one line each.
  def errors
    @browser.events(@session).filter_map do |event|
      params = event["params"]
      case event["method"]
      when "Runtime.exceptionThrown"
        params["exceptionDetails"].then { |d| d.dig("exception", "description") || d["text"] }
      when "Runtime.consoleAPICalled"
        params["args"].map { |a| a["value"] || a["description"] }.join(" ") if params["type"] == "error"
      when "Log.entryAdded"
        "#{params["entry"]["text"]} (#{params["entry"]["url"]})" if params["entry"]["level"] == "error"
      end
    end
  end

  # Closes the page and its browser context (the page unloads: its WebSockets close).
  def close
    @browser.command("Target.disposeBrowserContext", { browserContextId: @context })
  end

  private

  def command(method, params = {}, timeout: 10)
    @browser.command(method, params, session: @session, timeout: timeout)
  end
end
