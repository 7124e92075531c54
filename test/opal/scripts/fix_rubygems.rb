# frozen_string_literal: true

# Gem::Version and Gem::Requirement, which MRI always has loaded (Sinatra compares
# RUBY_VERSION with Gem::Version as it loads).
require "rubygems"

p Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.0")
versions = %w[1.0 1.0.0 1.0.a 1.0.a10 1.0.a2 1.0.b1 2.1.3 10.0 3.1.2 1.0-rc1 0.9.9 1.0.0.1 5.3.1 2]
p versions.sort_by { |v| [Gem::Version.new(v), v] }
p versions.map { |v| Gem::Version.new(v).segments }
p versions.map { |v| Gem::Version.new(v).prerelease? }
p versions.map { |v| Gem::Version.new(v).release.to_s }
p %w[5.3.1 1.0 2 1.2.b1].map { |v| Gem::Version.new(v).bump.to_s }
p Gem::Version.new("1.0") == Gem::Version.new("1.0.0"), Gem::Version.new("1.0").eql?(Gem::Version.new("1.0.0"))
p Gem::Version.new("1.2") <=> "1.10", Gem::Version.new("1.2") <=> nil
p Gem::Version.correct?("1.2.3"), Gem::Version.correct?("a.b"), Gem::Version.correct?(nil), Gem::Version.new("").to_s
begin
  Gem::Version.new("1..2")
rescue ArgumentError => e
  p e.message
end
reqs = ["~> 3.0", "~> 3.0.1", ">= 1.2", "< 2", "!= 1.5", "= 1.0", "1.0"]
checked = %w[3.0 3.5 4.0 3.0.1 3.0.9 3.1 1.1 1.2 1.5 1.0 2.0.a]
reqs.each { |r| p [r, checked.select { |v| Gem::Requirement.new(r).satisfied_by?(Gem::Version.new(v)) }] }
p Gem::Requirement.new("~> 3.0", "< 3.4").satisfied_by?(Gem::Version.new("3.3")), Gem::Requirement.new(">= 1", "< 2").to_s
p Gem::Requirement.default.to_s, Gem::Requirement.new(">= 1") === Gem::Version.new("1.1")
p Gem.ruby_version.is_a?(Gem::Version), Gem.win_platform?, Gem::LoadError.ancestors.include?(LoadError)
