# frozen_string_literal: true

# examples/rails in a real browser, as `rails s -u up` serves it in production: headless
# Chromium (test/support/browser.rb) opens the posts page, whose script is Rails' own Action
# Cable client (actioncable.esm.js) subscribing to PostsChannel over a WebSocket that Action
# Cable runs on UP!'s rack.hijack; a second page creates a post through the scaffold's form
# (typed and submitted as a user would), and the first page shows it without a reload: the
# broadcast went from the POST's request, through Action Cable's pub/sub, to the browser.
# Neither page logs an error. The same channel without a browser: test_example_rails.rb.
require_relative "helper"
require_relative "support/browser"
require_relative "support/cli_process"
require "bundler"
require "securerandom"
require "tmpdir"
require "fileutils"

class TestBrowserRails < Minitest::Test
  RAILS_DIR = File.expand_path("../examples/rails", __dir__)
  LIVE = "[...document.querySelectorAll('#live-posts li')].map((li) => li.textContent)"

  def time_limit_seconds
    90 # db:prepare and a production boot of Rails on a loaded 2-core machine
  end

  def setup
    @dir = Dir.mktmpdir("up-rails-browser")
    @env = {
      "BUNDLE_GEMFILE" => File.join(RAILS_DIR, "Gemfile"),
      "RAILS_ENV" => "production",
      "RACK_ENV" => "production",
      "SECRET_KEY_BASE" => SecureRandom.hex(64),
      "DATABASE_URL" => "sqlite3:#{File.join(@dir, "production.sqlite3")}"
    }
    prepare = in_rails_dir("rails", "db:prepare", wait: false)
    assert prepare.wait(timeout: 45).success?, "rails db:prepare failed:\n#{prepare.output}"
    @server = in_rails_dir("rails", "s", "-u", "up", "-p", "0", "-b", "127.0.0.1",
                           "-P", File.join(@dir, "server.pid"))
    @url = "http://127.0.0.1:#{@server.port}"
    @browser = Browser.open
  end

  def teardown
    @browser&.close
    @server&.stop
    FileUtils.rm_rf(@dir)
  end

  def test_a_post_created_in_one_page_appears_live_in_another
    watcher = @browser.open_page("#{@url}/posts")
    watcher.wait_until("document.getElementById('live-posts').dataset.connected === 'true'", timeout: 20)
    assert_equal [], watcher.evaluate(LIVE)

    author = @browser.open_page("#{@url}/posts/new")
    author.type("#post_title", "Live in the browser")
    author.type("#post_body", "Created in one page, pushed to the other.")
    author.click("input[type=submit]")

    assert_equal ["Live in the browser"], watcher.wait_until("#{LIVE}.length >= 1 && #{LIVE}")
    after_navigation(author) { author.wait_until("document.body?.textContent.includes('Post was successfully created.')") }
    assert_empty watcher.errors
    assert_empty author.errors
  end

  private

  # The submit navigates the page (the POST, then its redirect): an evaluation that meets the
  # navigation is asked again in the page that follows.
  def after_navigation(page, attempts: 20)
    yield
  rescue Browser::Error => e
    raise unless e.message.match?(/navigated|context/i) && (attempts -= 1).positive?

    sleep 0.1
    retry
  end

  # `bundle exec COMMAND` in examples/rails with its own Gemfile (see test_example_rails.rb).
  def in_rails_dir(*command, wait: true)
    Bundler.with_original_env do
      CLIProcess.new("exec", *command, command: ["bundle"], env: @env, chdir: RAILS_DIR, wait: wait)
    end
  end
end
