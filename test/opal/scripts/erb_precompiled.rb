# frozen_string_literal: true

require "erb"

# ERB templates given as literals, rendered with result(binding): on Opal they are compiled
# at build time (Up::Node::Rewriters::ErbTemplates) and read the binding's locals, or call
# methods of its self where there is no such local, as MRI's ERB does.
module Pages
  class Card
    TEMPLATE = ERB.new(<<-'HTML'.gsub(/^      /, ""))
      <h1><%= title %></h1>
      <% items.each do |item| %><li><%= h item %></li>
      <% end %><p><%= footer %></p>
    HTML

    def title = "from a method"
    def footer = "footer #{@n}"
    def h(text) = text.to_s.gsub("<", "&lt;")

    def initialize(n) = (@n = n)

    def with_locals
      items = ["a", "<b>"]
      title = "from a local"
      TEMPLATE.result(binding)
    end

    def with_methods
      items = []
      TEMPLATE.result(binding)
    end
  end

  GREETING = "Hello <%= name %>, <%= 1 + 2 %>"
  def self.greet(name) = ERB.new(GREETING).result(binding)
end

puts Pages::Card.new(1).with_locals
puts Pages::Card.new(2).with_methods
puts Pages.greet("Ada")
