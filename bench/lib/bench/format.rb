# frozen_string_literal: true

module Bench
  # How the tables write numbers and text into Markdown cells: latencies, CPU times, counts,
  # memory, error counts. Mixed into Bench::Report and Bench::WsTable; plain functions.
  module Format
    module_function

    def ms(microseconds)
      return "?" unless microseconds

      v = microseconds / 1000.0
      v < 10 ? format("%.2f ms", v) : format(v < 100 ? "%.1f ms" : "%.0f ms", v)
    end

    def us(microseconds)
      return "?" unless microseconds

      format(microseconds < 100 ? "%.1f µs" : "%.0f µs", microseconds)
    end

    def thousands(number)
      number.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
    end

    # KiB as MB of 1,024 KiB, as bench/idle_memory counts.
    def mb(kib)
      return "?" unless kib

      format("%.1f MB", kib / 1024.0)
    end

    # Error counts by kind, in bold when there are any.
    def errors(counts)
      return "0" if counts.empty?

      "**#{counts.map { |kind, n| "#{kind} #{n}" }.join(", ")}**"
    end

    # Text safe for one Markdown table cell.
    def cell(text)
      text = text.to_s.gsub(/\s+/, " ").gsub("|", "\\|").strip
      text.size > 240 ? "#{text[0, 237]}..." : text
    end
  end
end
