# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/show_exceptions'
require 'rack_compat/show_exceptions_page'

# Rack::ShowExceptions under Opal:
# - dump_exception appends the backtrace with <<; Opal strings are immutable, so the text is
#   built by interpolation.
# - pretty renders TEMPLATE with ERB#result(binding); Opal has no runtime ERB (nor eval), so
#   the same template, compiled by Opal at build time (show_exceptions_page.opalerb), renders
#   with a context object that answers the names the template's locals had.
module Rack
  class ShowExceptions
    def dump_exception(exception)
      message = if exception.respond_to?(:detailed_message)
                  exception.detailed_message(highlight: false)
                else
                  exception.message
                end
      "#{exception.class}: #{message}\n#{exception.backtrace.map { |l| "\t#{l}" }.join("\n")}"
    end

    # What the template reads: the locals of Rack's #pretty, and #h.
    class PageContext
      attr_reader :exception, :env, :req, :path, :frames

      def initialize(show_exceptions, exception, env, req, path, frames)
        @show_exceptions = show_exceptions
        @exception = exception
        @env = env
        @req = req
        @path = path
        @frames = frames
      end

      def h(obj)
        @show_exceptions.h(obj)
      end
    end

    def pretty(env, exception)
      req = Rack::Request.new(env)
      path = (req.script_name + req.path_info).squeeze("/")
      sources = {}
      frames = exception.backtrace.map { |line|
        next unless line =~ /(.*?):(\d+)(:in `(.*)')?/

        frame = Frame.new
        frame.filename = $1
        frame.lineno = $2.to_i
        frame.function = $4
        begin
          lineno = frame.lineno - 1
          lines = (sources[frame.filename] ||= ::File.readlines(frame.filename))
          frame.pre_context_lineno = [lineno - CONTEXT, 0].max
          frame.pre_context = lines[frame.pre_context_lineno...lineno]
          frame.context_line = lines[lineno].chomp
          frame.post_context_lineno = [lineno + CONTEXT, lines.size].min
          frame.post_context = lines[lineno + 1..frame.post_context_lineno]
        rescue StandardError
          nil
        end
        frame
      }.compact

      Template['rack_compat/show_exceptions_page'].render(PageContext.new(self, exception, env, req, path, frames))
    end
  end
end
