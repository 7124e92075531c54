# frozen_string_literal: true

require "roda"

# A Roda app written as Roda's README and its plugins' documentation teach: a routing
# tree, ERB views in a layout (render, h), cookie sessions and a flash (sessions, flash), JSON
# answers (json), halt, all HTTP verbs, static files (public), a 404 page (status_handler)
# and an error page (error_handler).
class TodoApp < Roda
  plugin :render, views: File.join(__dir__, "views")
  plugin :h
  plugin :sessions, secret: "r" * 64
  plugin :flash
  plugin :json
  plugin :halt
  plugin :all_verbs
  plugin :public, root: File.join(__dir__, "public")
  plugin :status_handler
  plugin :error_handler do |e|
    response.status = 500
    "Something broke: #{e.class}\n"
  end

  status_handler(404) { "No route for #{request.path}\n" }

  route do |r|
    r.public

    r.root do
      @todos = session["todos"] || []
      view("index")
    end

    r.on "todos" do
      r.is do
        r.get { { "todos" => session["todos"] || [] } }

        r.post do
          title = r.params["title"].to_s.strip
          r.halt(422, "a todo needs a title\n") if title.empty?

          (session["todos"] ||= []) << { "title" => title, "done" => false }
          flash["notice"] = "Added #{title}"
          r.redirect "/"
        end
      end

      r.is Integer do |index|
        todo = (session["todos"] || [])[index] or r.halt(404, { "error" => "no todo #{index}" })
        r.get { todo }
        r.patch do
          todo["done"] = true
          session["todos"] = session["todos"]
          todo
        end
        r.delete do
          session["todos"].delete_at(index)
          response.status = 204
          ""
        end
      end
    end

    r.get "crash" do
      raise KeyError, "missing"
    end

    r.post "reset" do
      session.clear
      r.redirect "/"
    end
  end
end
