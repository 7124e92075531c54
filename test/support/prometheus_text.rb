# frozen_string_literal: true

# A strict reader of the Prometheus text exposition format (version 0.0.4), as a scraper
# reads /metrics: # HELP and # TYPE lines, then samples "name{label="value",...} value".
# It raises on anything a scraper would refuse (a malformed line, a label value with a bad
# escape, a value that is no number, a sample of no declared family, a family declared twice,
# a histogram whose buckets do not grow or whose +Inf bucket is not its count).
class PrometheusText
  class Error < StandardError; end

  Sample = Struct.new(:name, :labels, :value)

  NAME = /[a-zA-Z_:][a-zA-Z0-9_:]*/
  LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/
  TYPES = %w[counter gauge histogram summary untyped].freeze
  SUFFIXES = { "histogram" => %w[_bucket _sum _count], "summary" => %w[_sum _count] }.freeze

  attr_reader :types, :samples

  def initialize(text)
    @types = {}
    @help = {}
    @samples = []
    raise Error, "the exposition must end with a newline" unless text.end_with?("\n")

    text.each_line(chomp: true).with_index(1) { |line, n| parse_line(line, n) }
    check_histograms
  end

  # Samples of name whose labels include the given ones.
  def find(name, **labels)
    want = labels.transform_keys(&:to_s).transform_values(&:to_s)
    @samples.select { |s| s.name == name && want.all? { |k, v| s.labels[k] == v } }
  end

  def sum(name, **labels)
    find(name, **labels).sum(&:value)
  end

  private

  def parse_line(line, n)
    case line
    when /\A\s*\z/ then nil
    when /\A# HELP (#{NAME}) (.*)\z/o then declare(@help, Regexp.last_match(1), Regexp.last_match(2), n)
    when /\A# TYPE (#{NAME}) (\S+)\z/o
      raise Error, "line #{n}: unknown type #{Regexp.last_match(2)}" unless TYPES.include?(Regexp.last_match(2))

      declare(@types, Regexp.last_match(1), Regexp.last_match(2), n)
    when /\A#/ then nil
    else @samples << sample(line, n)
    end
  end

  def declare(table, name, value, n)
    raise Error, "line #{n}: #{name} declared twice" if table.key?(name)

    table[name] = value
  end

  def sample(line, n)
    m = /\A(#{NAME})(?:\{(.*)\})? (\S+)(?: (-?\d+))?\z/o.match(line) or raise Error, "line #{n}: not a sample: #{line.inspect}"
    name, label_text, value = m.captures
    family!(name, n)
    Sample.new(name, labels(label_text.to_s, n), number(value, n))
  end

  def family!(name, n)
    return if @types.key?(name)

    base = SUFFIXES.values.flatten.uniq.filter_map { |suffix| name.delete_suffix(suffix) if name.end_with?(suffix) }
                   .find { |b| SUFFIXES.fetch(@types[b], []).any? { |suffix| name == b + suffix } }
    raise Error, "line #{n}: #{name} belongs to no declared family" unless base
  end

  def labels(text, n)
    out = {}
    rest = text
    until rest.empty?
      m = /\A#{LABEL}(,|\z)/o.match(rest) or raise Error, "line #{n}: bad labels #{text.inspect}"
      raise Error, "line #{n}: label #{m[1]} twice" if out.key?(m[1])

      out[m[1]] = m[2].gsub(/\\(.)/) { Regexp.last_match(1) == "n" ? "\n" : Regexp.last_match(1) }
      rest = m.post_match
    end
    out
  end

  def number(text, n)
    return Float::INFINITY if text == "+Inf"
    return -Float::INFINITY if text == "-Inf"
    return Float::NAN if text == "NaN"

    Float(text)
  rescue ArgumentError
    raise Error, "line #{n}: #{text.inspect} is not a number"
  end

  def check_histograms
    @types.each do |name, type|
      next unless type == "histogram"

      series = @samples.select { |s| s.name == "#{name}_bucket" }.group_by { |s| s.labels.except("le") }
      series.each do |labels, buckets|
        values = buckets.map(&:value)
        raise Error, "#{name}#{labels}: buckets do not grow: #{values}" unless values.each_cons(2).all? { |a, b| a <= b }
        raise Error, "#{name}#{labels}: no +Inf bucket" unless buckets.last.labels["le"] == "+Inf"

        count = @samples.find { |s| s.name == "#{name}_count" && s.labels == labels }
        raise Error, "#{name}#{labels}: +Inf bucket #{values.last} is not the count" unless count&.value == values.last
      end
    end
  end
end
