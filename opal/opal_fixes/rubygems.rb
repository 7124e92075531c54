# frozen_string_literal: true

# The part of RubyGems that gems call at run time, which MRI always has loaded and Opal has
# not at all: `Gem` was an uninitialized constant, so Sinatra's
# `Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.0")` stopped it as it loaded.
# Under Opal every gem was compiled into the bundle, so there is nothing to find or
# activate: Gem::Version and Gem::Requirement compare versions as RubyGems does,
# Gem.loaded_specs is empty, Gem.ruby_version is Opal's RUBY_VERSION.
module Gem
  class LoadError < ::LoadError; end

  # A version number: numeric segments and letter ones ("1.0.a2"); a letter segment makes
  # it a prerelease, which sorts before the release.
  class Version
    include Comparable

    PATTERN = /\A\s*([0-9]+(?:\.[0-9a-zA-Z]+)*(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?\s*\z/

    def self.correct?(version)
      PATTERN.match?(version.to_s)
    end

    def self.create(input)
      input.is_a?(Version) || input.nil? ? input : new(input)
    end

    attr_reader :version

    def initialize(version)
      unless self.class.correct?(version)
        raise ArgumentError, "Malformed version number string #{version}"
      end

      text = version.to_s.strip
      text = '0' if text.empty?
      @version = text.gsub('-', '.pre.')
    end

    def to_s
      @version
    end

    def inspect
      "#<Gem::Version #{@version.inspect}>"
    end

    def segments
      @version.scan(/[0-9]+|[a-z]+/i).map { |part| part.match?(/\A\d+\z/) ? part.to_i : part }
    end

    def prerelease?
      @version.match?(/[a-zA-Z]/)
    end

    # The release this prerelease leads to ("1.2.b1" -> "1.2").
    def release
      return self unless prerelease?

      numbers = segments
      numbers.pop while numbers.any? { |part| part.is_a?(String) }
      Version.new(numbers.join('.'))
    end

    # The next version at the second-to-last segment ("5.3.1" -> "5.4").
    def bump
      numbers = segments
      numbers.pop while numbers.any? { |part| part.is_a?(String) }
      numbers.pop if numbers.size > 1
      numbers[-1] = numbers[-1] + 1
      Version.new(numbers.join('.'))
    end

    def <=>(other)
      other = Version.new(other) if other.is_a?(String) && self.class.correct?(other)
      return nil unless other.is_a?(Version)

      mine = segments
      theirs = other.segments
      [mine.size, theirs.size].max.times do |index|
        a = mine[index] || 0
        b = theirs[index] || 0
        next if a == b
        return -1 if a.is_a?(String) && !b.is_a?(String)
        return 1 if !a.is_a?(String) && b.is_a?(String)

        return a <=> b
      end
      0
    end

    def eql?(other)
      other.is_a?(Version) && @version == other.version
    end

    def hash
      @version.hash
    end
  end

  # A list of version constraints ("~> 3.0", ">= 1.2"), all of which a version must meet.
  class Requirement
    OPS = {
      '=' => ->(v, r) { v == r }, '!=' => ->(v, r) { v != r }, '>' => ->(v, r) { v > r },
      '<' => ->(v, r) { v < r }, '>=' => ->(v, r) { v >= r }, '<=' => ->(v, r) { v <= r },
      '~>' => ->(v, r) { v >= r && v.release < r.bump }
    }.freeze
    CONSTRAINT = /\A\s*(=|!=|>|<|>=|<=|~>)?\s*(\S+)\s*\z/

    def self.create(*inputs)
      new(*inputs)
    end

    def self.default
      new('>= 0')
    end

    attr_reader :requirements

    def initialize(*constraints)
      constraints = constraints.flatten.compact.map(&:to_s)
      constraints = ['>= 0'] if constraints.empty?
      @requirements = constraints.map do |constraint|
        op, version = constraint.match(CONSTRAINT)&.captures
        raise ArgumentError, "Illformed requirement [#{constraint.inspect}]" unless version

        [op || '=', Version.new(version)]
      end
    end

    def satisfied_by?(version)
      version = Version.create(version)
      @requirements.all? { |op, required| OPS.fetch(op).call(version, required) }
    end
    alias === satisfied_by?
    alias =~ satisfied_by?

    def to_s
      @requirements.map { |op, version| "#{op} #{version}" }.join(', ')
    end
  end

  def self.ruby_version
    Version.new(RUBY_VERSION)
  end

  def self.loaded_specs
    @loaded_specs ||= {}
  end

  def self.win_platform?
    false
  end
end
