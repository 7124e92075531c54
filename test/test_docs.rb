# frozen_string_literal: true

# The README and the manual in docs/: every relative link reaches a file, and every #anchor a
# heading of that file (as GitHub makes a heading's anchor); and they speak to users, with no
# ticket numbers or words that only make sense on the computer they were written on.
require_relative "helper"
require "tmpdir"

class TestDocs < Minitest::Test
  ROOT = File.expand_path("..", __dir__)
  FILES = (%w[README.md CHANGELOG.md bench/README.md] + Dir.glob("docs/*.md", base: ROOT).sort).freeze

  def test_the_manual_has_its_topics
    %w[configuration deployment signals tls static-files websockets hijack opal benchmarks
       architecture production CONTRIBUTING].each do |topic|
      assert File.file?(File.join(ROOT, "docs", "#{topic}.md")), "docs/#{topic}.md is missing"
    end
  end

  def test_every_relative_link_resolves
    broken = FILES.flat_map { |file| broken_links(file) }
    assert_empty broken
  end

  # Ticket numbers, words about one computer, and paths of a checkout on one (bench/run's
  # command lines name files relative to the repository).
  LOCAL_WORDS = %r{issue ?[0-9]+|this machine|\.\./shared/|bench-lock|/work/|#{Regexp.escape(ROOT)}/}i

  def test_no_ticket_numbers_or_local_words
    found = FILES.flat_map do |file|
      File.readlines(File.join(ROOT, file)).each_with_index.filter_map do |line, i|
        "#{file}:#{i + 1}: #{line.strip}" if line.match?(LOCAL_WORDS)
      end
    end
    assert_empty found
  end

  def test_the_link_check_sees_a_broken_anchor
    Dir.mktmpdir do |dir|
      path = File.join(dir, "page.md")
      File.write(path, "# A title\n\n[ok](#a-title) [gone](#no-such-title) [away](missing.md)\n")
      assert_equal ["#{path}: #no-such-title", "#{path}: missing.md"], broken_links(path)
    end
  end

  private

  # "file: link" for each link of file that names a missing file or heading. Links inside
  # code (indented blocks, fences) are not links.
  def broken_links(file)
    path = File.expand_path(file, ROOT)
    text = File.read(path).gsub(/```.*?```/m, "").gsub(/^(    |\t).*$/, "")
    text.scan(/\]\(([^)\s]+)\)/).flatten.filter_map do |link|
      next if link.match?(%r{\A[a-z]+:}i)

      target, anchor = link.split("#", 2)
      dest = target.empty? ? path : File.expand_path(target, File.dirname(path))
      next "#{file}: #{link}" unless File.exist?(dest)
      next if anchor.nil? || !dest.end_with?(".md")

      "#{file}: #{link}" unless anchors(dest).include?(anchor)
    end
  end

  # GitHub's anchor for each heading: lower case, punctuation but - and _ dropped, spaces as -.
  def anchors(path)
    File.read(path).scan(/^#+ (.+)$/).map { |(heading)| heading.downcase.gsub(/[^\p{Word}\- ]/, "").tr(" ", "-") }
  end
end
