# frozen_string_literal: true

require_relative "helper"

# The stdlib shims (Digest on crypto, Zlib on zlib, Tempfile on fs, URI, CGI) print what
# MRI's own libraries print.
class TestOpalStdlibShims < Minitest::Test
  def test_digest_zlib_tempfile_uri_and_cgi_match_mri
    out = assert_same_on_opal_and_mri("stdlib_shims")
    assert_includes out, Digest::SHA256.hexdigest("The quick brown fox – jumps")
  end

  # Roda's sessions: AES-256-CTR, HMAC-SHA-256 and the pack directives of its cookie.
  def test_openssl_cipher_hmac_and_pack_match_mri
    out = assert_same_on_opal_and_mri("openssl_pack")
    assert_includes out, "#<Encoding:ASCII-8BIT>"
  end

  # SecureRandom from a pool filled by one crypto call: each form's length, encoding and
  # alphabet, across refills and past the pool's size, and no draw repeated.
  def test_securerandom_matches_mri
    out = assert_same_on_opal_and_mri("securerandom")
    assert_includes out, "[16, #<Encoding:ASCII-8BIT>]\n"
  end

  # IPAddr (Sinatra and rack-protection): networks, include?, errors, text forms.
  def test_ipaddr_matches_mri
    out = assert_same_on_opal_and_mri("ipaddr")
    assert_includes out, %(["1:2:3:4:5:6:7:8", "1:0:0:4::8", "0:0:1::", "::", "::1", "1::", "1::1:0:0:1"]\n)
  end

  # ERB compiled to Ruby source (Tilt, Sinatra's erb): each template in each trim mode.
  def test_erb_renders_as_mri
    out = assert_same_on_opal_and_mri("erb_templates")
    assert_includes out, %(["<>", "<h1>Fruit &amp; &lt;Veg&gt;</h1>\\n<ul>\\n  <li>apple</li>\\n  <li>pear</li>\\n</ul>\\n"]\n)
  end

  # ERB templates written as literals and rendered with result(binding) (Rack's and
  # Sinatra's error pages) are compiled at build time: locals and methods as on MRI, and no
  # Ruby compiler in the bundle.
  def test_literal_erb_templates_render_as_mri_without_the_parser
    out = assert_same_on_opal_and_mri("erb_precompiled")
    assert_includes out, "<h1>from a local</h1>\n<li>a</li>\n<li>&lt;b></li>\n<p>footer 1</p>\n"
    assert_includes out, "<h1>from a method</h1>\n"
    refute File.exist?(Up::Node::OpalBuilder.parser_path(OpalRack.bundle("erb_precompiled"))), "the bundle needs no parser"
  end

  # File and Dir on bytes and with blocks (rack_compat/node_paths.rb), and File.dirname and
  # expand_path on MRI's edge cases (leading separators, '.', '..', levels).
  def test_file_and_dir_paths_match_mri
    out = assert_same_on_opal_and_mri("node_paths")
    assert_includes out, %(["///a/b", "/a", "///a/b", "///a/b"]\n)
  end

  # Regexp#names, #named_captures and MatchData#named_captures, asked again of the same
  # Regexp (rack_compat/regexp_source.rb keeps its groups): new objects each time, a
  # duplicate name giving the last group that matched.
  def test_regexp_named_captures_match_mri
    out = assert_same_on_opal_and_mri("regexp_names")
    assert out.start_with?(%({"name"=>"item0", "id"=>"0", "format"=>nil}\n)), out
  end
end
