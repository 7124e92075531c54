# frozen_string_literal: true

# bin/check-includes, which bin/test runs: the engine's includes form a graph without a
# circle, between modules and between folders, and a circle fails the check.
require_relative "helper"
require "open3"
require "tmpdir"

class TestCheckIncludes < Minitest::Test
  CHECK = File.expand_path("../bin/check-includes", __dir__)

  def check(dir = nil)
    Open3.capture3(RbConfig.ruby, CHECK, *dir)
  end

  def write(root, files)
    files.each do |path, text|
      FileUtils.mkdir_p(File.dirname(File.join(root, path)))
      File.write(File.join(root, path), text)
    end
  end

  def test_the_engine_has_no_circle
    out, err, status = check
    assert status.success?, err
    assert_match(/no circle/, out)
  end

  def test_modules_including_each_other_fail
    Dir.mktmpdir do |root|
      write(root, "core/a.h" => %(#include "core/b.h"\n), "core/a.c" => %(#include "core/a.h"\n),
                  "core/b.h" => "", "core/b.c" => %(#include "core/a.h"\n#include "core/b.h"\n))
      _, err, status = check(root)
      refute status.success?
      assert_match(/modules include each other in a circle: core\/a, core\/b/, err)
    end
  end

  def test_folders_including_each_other_fail
    Dir.mktmpdir do |root|
      write(root, "low/a.c" => %(#include "high/b.h"\n), "high/b.h" => "",
                  "high/c.c" => %(#include "low/d.h"\n), "low/d.h" => "")
      _, err, status = check(root)
      refute status.success?
      assert_match(/folders include each other in a circle: high, low/, err)
      refute_match(/modules include/, err)
    end
  end

  def test_a_header_next_to_its_includer_resolves
    Dir.mktmpdir do |root|
      write(root, "core/a.h" => %(#include "b.h"\n), "core/b.h" => %(#include "a.h"\n))
      _, err, status = check(root)
      refute status.success?
      assert_match(/core\/a, core\/b/, err)
    end
  end
end
