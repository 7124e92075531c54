# frozen_string_literal: true

# An app may keep what the server handed it (an Up::Client, an Up::Subscription, env's
# rack.hijack and rack.early_hints) after the server is stopped and garbage collected. Using
# those objects then, and GC marking and freeing them in any order with the server, must not
# touch the server's freed memory. Such a read shows only now and then as a crash (a client
# marked after its server once locked a freed mutex and aborted the test run), so the script
# runs under valgrind, which reports every read of freed memory at once.
require_relative "helper"
require "open3"
require "tmpdir"

class TestOutlivedServer < Minitest::Test
  SCRIPT = File.expand_path("support/outlived_server.rb", __dir__)

  def test_objects_the_app_kept_are_safe_to_use_and_collect_after_the_server
    Dir.mktmpdir do |dir|
      xml = File.join(dir, "valgrind.xml")
      out, err, status = Open3.capture3("valgrind", "--undef-value-errors=no", "--xml=yes",
                                        "--xml-file=#{xml}", RbConfig.ruby, SCRIPT)
      assert status.success?, "the script failed:\n#{out}\n#{err}"
      assert_equal 2, out.scan("servers left: 0").size, "each server was collected before the app used what it kept:\n#{out}"
      assert_equal 2, out.scan("client write=false open=false pending=-1 timeout=nil close=nil").size, out
      assert_equal 6, out.scan("subscription cancel=nil active=false").size, out
      assert_equal 2, out.scan("hijack=IOError early_hints=nil").size, out
      # Leaks are not the question (XML mode always lists them, Ruby's own among them).
      ours = File.read(xml).split("<error>").drop(1).select do |e|
        !e.include?("<kind>Leak_") && e.match?(%r{<obj>[^<]*/up_ext\.so</obj>})
      end
      assert_empty ours.map { |e| e[%r{<what>(.*?)</what>}m, 1] || e[%r{<text>(.*?)</text>}m, 1] },
                   "valgrind found the extension touching memory it must not:\n#{ours.first}"
    end
  end
end
