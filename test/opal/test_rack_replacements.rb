# frozen_string_literal: true

require_relative "helper"

# Rack methods opal/rack_compat/ defines again for Opal: when Rack's method changes, the
# rewrite is stale, so this fails.
class TestOpalRackReplacements < Minitest::Test
  # Rack methods rewritten in opal/rack_compat/ (file, method, sha256 prefix of Rack
  # 3.2.8's source of that method). A change in Rack's method means the rewrite is stale.
  REWRITTEN = [
    ["rack/utils.rb", "forwarded_values", "541d5fdbe8512ec2"],
    ["rack/utils.rb", "clean_path_info", "243a73f2d8eb740e"],
    ["rack/media_type.rb", "type", "2359721542e80d0c"],
    ["rack/media_type.rb", "params", "c2e94add7e763241"],
    ["rack/request.rb", "form_pairs", "5539e20589af54de"],
    ["rack/request.rb", "parse_http_accept_header", "4ec54143a8d23dc9"],
    ["rack/mock_response.rb", "body", "174fe1fdfe3af10f"],
    ["rack/common_logger.rb", "log", "a74f82e033b125ca"],
    ["rack/multipart/generator.rb", "dump", "297fd0ea781c7345"],
    ["rack/multipart/generator.rb", "content_for_tempfile", "dcdb20a493570450"],
    ["rack/rewindable_input.rb", "make_rewindable", "b2c812fa05e92dbb"],
    ["rack/directory.rb", "list_directory", "8ee371110e6650bc"],
  ].freeze

  def test_rewritten_rack_methods_match_the_installed_rack
    REWRITTEN.each do |file, name, digest|
      source = method_source(File.join(OpalRack::RACK_LIB, file), name)
      assert_equal digest, Digest::SHA256.hexdigest(source)[0, 16],
                   "Rack's #{file} #{name} changed: redo its rewrite in opal/rack_compat/"
    end
  end

  private

  # The text of the first `def name` in `path`, through the `end` at its indentation.
  def method_source(path, name)
    lines = File.readlines(path)
    start = lines.index { |l| l =~ /^(\s*)def (self\.)?#{Regexp.escape(name)}\b/ }
    flunk "#{path}: no def #{name}" unless start
    indent = lines[start][/^\s*/]
    stop = (start + 1...lines.size).find { |i| lines[i] =~ /^#{indent}end\b/ }
    lines[start..stop].join
  end
end
