# frozen_string_literal: true
# backtick_javascript: true

# Kernel#format in Opal drops the text between the previous directive and a "%%" (it moves
# its slice start without copying), so "%s</title>...width:100%%" lost everything after
# the title: Rack::Directory's page header. Here each literal "%%" is swapped for a private
# character before Opal's format runs and turned into "%" after.
module Kernel
  PERCENT_STANDIN = "\uE000"

  alias __opal_format format

  def format(format_string, *args)
    fmt = format_string.to_str
    return __opal_format(fmt, *args) unless fmt.include?('%%') && !fmt.include?(PERCENT_STANDIN)

    __opal_format(__percent_literals(fmt), *args).gsub(PERCENT_STANDIN, '%')
  end
  alias sprintf format

  # `fmt` with each "%%" that stands where a directive starts replaced by the stand-in.
  def __percent_literals(fmt)
    out = []
    i = 0
    while (j = fmt.index('%', i))
      out << fmt[i...j]
      if fmt[j + 1] == '%'
        out << PERCENT_STANDIN
        i = j + 2
      else
        out << '%'
        i = j + 1
      end
    end
    out << fmt[i..]
    out.join
  end
end

class String
  def %(data)
    ::Array === data ? format(self, *data) : format(self, data)
  end
end
