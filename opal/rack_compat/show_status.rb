# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/show_status'
require 'rack_compat/show_status_page'

# Rack::ShowStatus renders TEMPLATE with ERB#result(binding); Opal has no runtime ERB (nor
# eval), so the same template, compiled by Opal at build time (show_status_page.opalerb),
# renders with a context object that answers the names the template's locals had.
module Rack
  class ShowStatus
    # What the template reads: the locals of Rack's #call, and #h.
    class PageContext
      attr_reader :status, :req, :message, :detail

      def initialize(show_status, status, req, message, detail)
        @show_status = show_status
        @status = status
        @req = req
        @message = message
        @detail = detail
      end

      def h(obj)
        @show_status.h(obj)
      end
    end

    def call(env)
      status, headers, body = response = @app.call(env)
      empty = headers[CONTENT_LENGTH].to_i <= 0

      if (status.to_i >= 400 && empty) || env[RACK_SHOWSTATUS_DETAIL]
        req = Rack::Request.new(env)
        message = Rack::Utils::HTTP_STATUS_CODES[status.to_i] || status.to_s
        detail = env[RACK_SHOWSTATUS_DETAIL] || message

        context = PageContext.new(self, status, req, message, detail)
        html = Template['rack_compat/show_status_page'].render(context)
        size = html.bytesize

        response[2] = Rack::BodyProxy.new([html]) do
          body.close if body.respond_to?(:close)
        end

        headers[CONTENT_TYPE] = "text/html"
        headers[CONTENT_LENGTH] = size.to_s
      end

      response
    end
  end
end
