# frozen_string_literal: true
# backtick_javascript: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/common_logger'

# Rack::CommonLogger#log escapes unprintable characters with gsub! and a POSIX class, then
# sets msg[-1]; Opal strings are immutable and JS regexps have no [:print:]. This builds the
# same line: C0/C1 control characters (what [:print:] excludes) become \xNN. The time is
# formatted once a second (Opal's strftime and the gsub were a fifth of the line's cost,
# which an app pays on every request), and a line with nothing to escape is not rescanned.
module Rack
  class CommonLogger
    NON_PRINTABLE = /[\u0000-\u001f\u007f-\u009f]/

    private

    def log(env, status, response_headers, began_at)
      request = Rack::Request.new(env)
      length = extract_content_length(response_headers)

      msg = sprintf(FORMAT,
        request.ip || "-",
        request.get_header("REMOTE_USER") || "-",
        __up_timestamp,
        request.request_method,
        request.script_name,
        request.path_info,
        request.query_string.empty? ? "" : "?#{request.query_string}",
        request.get_header(SERVER_PROTOCOL),
        status.to_s[0..3],
        length,
        Utils.clock_time - began_at)

      msg = msg.gsub(NON_PRINTABLE) { |c| sprintf("\\x%x", c.ord) } if NON_PRINTABLE.match?(msg)
      msg = "#{msg[0..-2]}\n"

      logger = @logger || request.get_header(RACK_ERRORS)
      if logger.respond_to?(:write)
        logger.write(msg)
      else
        logger << msg
      end
    end

    # Time.now as MRI's log line shows it, made again only when the second has changed.
    def __up_timestamp
      second = `Math.floor(Date.now() / 1000)`
      return @__up_stamp if @__up_second == second

      @__up_second = second
      @__up_stamp = Time.at(second).strftime("%d/%b/%Y:%H:%M:%S %z")
    end
  end
end
